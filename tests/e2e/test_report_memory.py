"""`protolab report` of a 10,000-window run stays under 500 MiB peak memory (time is a benchmark's job, not a test's).

The run is benchmarks/report_render.py's synthetic study grown to about 10,000 windows; the report runs in a fresh
process whose peak resident set size (and that of the drawing workers it forks) is read from its parent's rusage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
LIMIT_MIB = 500

_MEASURE = """
import json, resource, subprocess, sys
p = subprocess.run([sys.executable, "-m", "protolab.cli", "report", sys.argv[1]], capture_output=True, text=True)
print(json.dumps({"code": p.returncode, "err": p.stderr[-2000:],
                  "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def test_the_report_of_10000_windows_peaks_under_500_mib(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from report_render import make_run

    rd = make_run(tmp_path, windows=10_000)
    assert len(rd.records()) >= 9_900
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(rd.path)], capture_output=True, text=True, timeout=600)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0, got["err"]
    assert (rd.path / "report.html").stat().st_size > 0 and (rd.path / "cells.csv").is_file()
    assert got["peak_mib"] < LIMIT_MIB, f"protolab report peaked at {got['peak_mib']:.0f} MiB"
