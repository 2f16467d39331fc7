"""--json on limits, validate, doctor, report and compare: documents a script can read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protolab.analysis.wire import ceiling

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "data" / "v1-run"


def _json(*args: str, ok: tuple[int, ...] = (0,)) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-m", "protolab.cli", *args, "--json"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode in ok, p.stderr
    return json.loads(p.stdout)


def test_limits_json_gives_the_model_figures():
    doc = _json("limits", "--protocol", "nbd", "--link", "1GbE", "--mtu", "9000", "--workload", "tr3808-8k")
    [c] = doc["ceilings"]
    # the workload's 4 I/Os in flight per stream: Linux's pure ACKs with queued I/Os (analysis.wire_tcp)
    model = ceiling("nbd", link_bps="1GbE", mtu=9000, block_size=8192, read_pct=75.0, oio=4)
    assert c["protocol"] == "nbd" and c["iops"] == pytest.approx(model.iops) and doc["oio"] == 4
    assert c["wire_cost"]["frames_to_host"] == pytest.approx(model.wire_cost.frames_to_host)


def test_validate_json_counts_the_matrix_and_lists_warnings():
    doc = _json("validate", str(ROOT / "src/protolab/plan/studies/tr3916-vm.toml"), "--scale", "quick")
    assert doc["valid"] is True and doc["scale"] == "quick" and doc["cells"] == 4 * 3
    assert doc["measurement_s"] == pytest.approx(12 * 7)
    assert any("page cache" in w for w in doc["warnings"])


def test_doctor_json_has_every_section():
    doc = _json("doctor", ok=(0, 1))
    assert [s["section"] for s in doc["sections"]] == ["fio", "embedded lab", "virtual machines (optional)"]
    assert all({"item", "ok", "detail", "fix"} <= set(c) for s in doc["sections"] for c in s["checks"])


def test_report_and_compare_json(tmp_path):
    run = tmp_path / V1.name
    shutil.copytree(V1, run)
    doc = _json("report", str(run), "--no-figures")
    assert doc["baseline"] == "local" and len(doc["rows"]) == 3
    iscsi = next(r for r in doc["rows"] if r["configuration"] == "iscsi-1500")
    assert iscsi["repeats"] == 3 and 0 < iscsi["percent_of_baseline"]["iops"] < 100
    assert any(f["kind"] == "difference" and "iscsi-1500" in f["configurations"] for f in doc["findings"])
    cmp = _json("compare", str(run), str(run), "--out", str(tmp_path / "cmp"))
    assert cmp["rows"] and all(r["relative"] == pytest.approx(100.0) for r in cmp["rows"] if r["metric"] == "iops")
