#!/usr/bin/env python3
"""Per-cell overhead of `protolab run`: cell wall time minus its configured seconds.

    PYTHONPATH=src .venv/bin/python benchmarks/cell_overhead.py [--cells 8] [--seconds 1]
    PYTHONPATH=src .venv/bin/python benchmarks/cell_overhead.py --lab-hosts 8 [--streams 20] [--cells 4] \
        [--warmup 2] [--seconds 3]     # as root: the embedded lab, NBD and iSCSI cells in turn

Runs a plan of ``--cells`` cells (psync on a scratch file, warm-up 1 s + window ``--seconds``)
and prints, from the records' start times, the median gap between consecutive cells minus the
configured warm-up + window — what the harness adds per cell (job files, fio start, parse,
records). With ``--lab-hosts N`` the cells run on the embedded lab instead: N hosts × ``--streams``
streams × 4 OIO against NBD and iSCSI (``--cells`` repeats each, the two configurations in turn), one
fio server per host and one fio client — the overhead at scale (the jobs' connections and their start
spread, the client run's stop once every server has sent the window's end status), per configuration of the
cell that ended each gap. The machine is shared and noisy: the median is what
the README quotes.
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


LAB_PLAN = """name = "overhead-lab"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "ovh{hosts}"
hosts = {hosts}
[lab.link]
rate = "10GbE"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
hosts = {hosts}
streams = {streams}
oio = 4
[method]
warmup = "{warmup}s"
duration = "{seconds}s"
repeats = {cells}
"""


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--lab-hosts", type=int, default=0, help="run on the embedded lab with this many hosts (root)")
    ap.add_argument("--streams", type=int, default=20, help="streams per lab host (with --lab-hosts)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "data"
        data.mkdir()
        plan = Path(d) / "p.toml"
        if args.lab_hosts:
            plan.write_text(LAB_PLAN.format(hosts=args.lab_hosts, streams=args.streams, cells=args.cells,
                                            seconds=args.seconds, warmup=args.warmup))
        else:
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
    if args.lab_hosts:  # per configuration of the cell a gap leads to (an iSCSI cell's gap holds its logins)
        for name in sorted({r["coords"]["configuration"] for r in recs}):
            mine = [g for g, rb in zip(gaps, recs[1:]) if rb["coords"]["configuration"] == name]
            if mine:
                print(f"  gaps before {name} cells: median {statistics.median(mine):.3f} s  "
                      f"(range {min(mine):.3f}–{max(mine):.3f}, {len(mine)} gaps)")


if __name__ == "__main__":
    main()
