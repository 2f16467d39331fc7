"""The command line starts light: heavy modules load only in the commands that use them."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

HEAVY = ("scipy", "numpy", "matplotlib", "jinja2", "rich.progress")  # rich.progress: only `run` draws a bar


def _loaded_after(argv: list[str]) -> list[str]:
    code = ("import sys, runpy\n"
            f"sys.argv = {['protolab', *argv]!r}\n"
            "try:\n    runpy.run_module('protolab.cli', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            f"print('LOADED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("LOADED:"))
    return [m for m in line.removeprefix("LOADED:").split(",") if m]


def test_help_plans_workloads_load_no_heavy_module():
    for argv in (["--help"], ["plans"], ["workloads"], ["report", "--help"], ["lab", "--help"]):
        assert _loaded_after(argv) == [], argv
