#!/usr/bin/env python3
"""Start-up time of protolab's commands, whole process: median of N runs each, interleaved.

    .venv/bin/python benchmarks/startup.py [--runs 5]

Prints one line per command (median and range, seconds) and `python -c pass` for scale.
The machine is shared and noisy: the commands run in rounds (A B C … A B C …), and the
median is what the README quotes.
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
    ap.add_argument("--runs", type=int, default=5)
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
    for name, ts in times.items():
        print(f"{name:<22} median {statistics.median(ts):.3f} s  (range {min(ts):.3f}–{max(ts):.3f}, "
              f"{len(ts)} runs)")


if __name__ == "__main__":
    main()
