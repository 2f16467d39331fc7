#!/usr/bin/env python3
"""What the harness costs the measurement: `protolab run` vs plain fio on the same job, interleaved pairs.

    PYTHONPATH=src .venv/bin/python benchmarks/harness_vs_fio.py [--pairs 5] [--seconds 2]

Each pair runs one cell through protolab (psync 4 KiB random reads of a local scratch file),
then plain fio on the very job file protolab wrote for it (without protolab's IOPS log).
Prints the median of the per-pair IOPS ratios harness / plain fio (1.00 = no cost). The machine
is shared and noisy: pairs are interleaved so drift hits both sides alike.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIO = ROOT / ".deps" / "fio" / "bin" / "fio"
PLAN = """name = "harness"
baseline = "psync"
workloads = ["tr3808-4k"]
[targets.scratch]
url = "{dir}"
[[configurations]]
name = "psync"
target = "scratch"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "1s"
duration = "{seconds}s"
repeats = 1
data_size = "16M"
"""


def _fio_iops(text: str) -> float:
    jobs = json.loads(text[text.index("{"):])["jobs"]
    return sum(j["read"]["iops"] + j["write"]["iops"] for j in jobs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    ratios, harness, plain = [], [], []
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "data"
        data.mkdir()
        plan = Path(d) / "p.toml"
        plan.write_text(PLAN.format(dir=data, seconds=args.seconds))
        for k in range(args.pairs):
            out = Path(d) / f"r{k}"
            p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(out)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"protolab run failed: {p.stderr.strip()[-500:]}")
            run = next(out.iterdir())
            rec = json.loads((run / "records.jsonl").read_text().splitlines()[0])  # the schema-2 store
            h = rec["result"]["iops"]
            # the same job, minus protolab's per-second IOPS log
            job = (run / rec["job_file"]).read_text()
            job = re.sub(r"^(write_iops_log|log_avg_msec)=.*\n", "", job, flags=re.M)
            jf = Path(d) / f"plain{k}.fio"
            jf.write_text(job)
            q = subprocess.run([str(FIO), "--output-format=json", str(jf)], capture_output=True, text=True)
            if q.returncode != 0:
                sys.exit(f"fio failed: {q.stderr.strip()[-500:]}")
            f = _fio_iops(q.stdout)
            harness.append(h)
            plain.append(f)
            ratios.append(h / f)
    print(f"harness IOPS median {statistics.median(harness):,.0f}, plain fio {statistics.median(plain):,.0f}")
    print(f"harness / plain fio  median ratio {statistics.median(ratios):.3f}  "
          f"(range {min(ratios):.3f}–{max(ratios):.3f}, {len(ratios)} interleaved pairs)")


if __name__ == "__main__":
    main()
