#!/usr/bin/env python3
"""Per-cell overhead of `protolab run` with one local host: cell wall time minus its configured seconds.

    PYTHONPATH=src .venv/bin/python benchmarks/cell_overhead.py [--cells 8] [--seconds 1]

Runs a plan of ``--cells`` cells (psync on a scratch file, warm-up 1 s + window ``--seconds``)
and prints, from the records' start times, the median gap between consecutive cells minus the
configured warm-up + window — what the harness adds per cell (job files, fio start, parse,
records). The machine is shared and noisy: the median is what the README quotes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

PLAN = """name = "overhead"
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
warmup = "{warmup}s"
duration = "{seconds}s"
repeats = {cells}
data_size = "16M"
"""


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "data"
        data.mkdir()
        plan = Path(d) / "p.toml"
        plan.write_text(PLAN.format(dir=data, cells=args.cells, seconds=args.seconds, warmup=args.warmup))
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(Path(d) / "r")],
                           capture_output=True, text=True)
        total = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"protolab run failed: {p.stderr.strip()[-500:]}")
        run = next((Path(d) / "r").iterdir())
        lines = (run / "records.jsonl").read_text().splitlines()  # the schema-2 store
        recs = sorted((json.loads(line) for line in lines if line.strip()), key=lambda r: r["seq"])
    starts = [_t(r["started"]) for r in recs]
    # 'started' is when the measured window starts (the warm-up's end); a gap holds one warm-up + window + overhead
    # the window's and the next warm-up's own seconds (a warm-up ends at fio's status nearest its time)
    gaps = [b - a - ra["result"]["runtime_s"] - rb["warmup"]["seconds"]
            for a, b, ra, rb in zip(starts, starts[1:], recs, recs[1:])]
    print(f"cells {len(recs)}, warm-up {args.warmup:g} s + window {args.seconds:g} s, whole run {total:.1f} s")
    print(f"per-cell overhead  median {statistics.median(gaps):.3f} s  (range {min(gaps):.3f}–{max(gaps):.3f}, "
          f"{len(gaps)} gaps)")


if __name__ == "__main__":
    main()
