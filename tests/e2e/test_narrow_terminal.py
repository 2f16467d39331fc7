"""In a pipe or a narrow terminal no table cuts a number: `limits` and `report` through `cat` at COLUMNS=60."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from protolab.analysis.limits import limits_rows
from protolab.plan.links import parse_link

V1 = Path(__file__).parent.parent / "data" / "v1-run"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _piped(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "COLUMNS": "60", "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = " ".join([sys.executable, "-m", "protolab.cli", *args]) + " | cat"
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_limits_at_60_columns_prints_every_number_whole():
    text = _piped("limits", "--link", "10GbE", "--mtu", "9000", "--workload", "tr3808-8k")
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 60
    rows = limits_rows(["iscsi", "nfs", "nbd", "fcoe"], parse_link("10GbE"), 9000, 8192, 75.0, oio=4)  # the workload's
    for r in rows:
        iops = f"{r.iops:,.0f}"
        assert iops in NUMBER.findall(text), (iops, text)


def test_report_at_60_columns_prints_every_number_whole(tmp_path):
    run = tmp_path / V1.name
    shutil.copytree(V1, run)
    text = _piped("report", str(run), "--no-figures")
    assert "…" not in text
    md = (run / "report.md").read_text()
    table = [ln for ln in md.splitlines() if ln.startswith("| 1×1×4=4 ")]
    assert len(table) == 3
    shown = set(NUMBER.findall(text))
    for line in table:  # every figure of the Markdown summary is on the terminal, whole
        for cell in line.strip("|").split("|")[3:]:
            for num in NUMBER.findall(cell):
                assert num in shown, (num, line)
