#!/usr/bin/env python3
"""Start-up time of protolab's commands, whole process: median of N runs each, interleaved.

    .venv/bin/python benchmarks/startup.py [--runs 7]

Prints one line per command (median and range, seconds, and the median as a multiple of the interpreter's own
start, `python -c pass`, timed in the same rounds). The machine is shared and noisy: the commands run in rounds
(A B C … A B C …), and the medians are what the README quotes. The goal: `protolab --help` within 2× of
`python -c pass`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAN = """name = "startup"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1 }]
[[configurations]]
name = "a"
target = "./t.dat"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        plan = Path(d) / "p.toml"
        plan.write_text(PLAN)
        cmds = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "protolab --help": [sys.executable, "-m", "protolab.cli", "--help"],
            "protolab plans": [sys.executable, "-m", "protolab.cli", "plans"],
            "protolab workloads": [sys.executable, "-m", "protolab.cli", "workloads"],
            "protolab validate": [sys.executable, "-m", "protolab.cli", "validate", str(plan)],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.runs):
            for name, argv in cmds.items():
                t = time.perf_counter()
                subprocess.run(argv, capture_output=True, cwd=d, check=True)
                times[name].append(time.perf_counter() - t)
    base = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        print(f"{name:<22} median {statistics.median(ts):.3f} s  {statistics.median(ts) / base:4.1f}×  "
              f"(range {min(ts):.3f}–{max(ts):.3f}, {len(ts)} runs)")


if __name__ == "__main__":
    main()
