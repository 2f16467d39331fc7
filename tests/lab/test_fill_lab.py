"""The fill stage on the real lab with real fio: each level writes only its new part of every target, the
cells measure on the filled region, and cells.csv and the report carry the fill level."""

from __future__ import annotations

import csv
import json

import pytest

from conftest import family_prefix, lab_workdir, run_plan

pytestmark = pytest.mark.lab
# its own prefix (PROTOLAB_TEST_LAB_PREFIX + "f" when set, so parallel sessions never share one)
PREFIX = family_prefix("f")
MIB = 1024**2

PLAN = f"""
name = "fill-lab"
baseline = "local"
workloads = ["tr3808-4k"]
seed = "S4 EMC: performance against fill level"
[[seed_findings]]
said = "IOPS fell as the LUNs filled."
compare = "fill"
claims = [{{ worse = true }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[[configurations]]
name = "local"
target = "lab:local"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
streams = 2
oio = 4
[method]
warmup = "1s"
duration = "2s"
repeats = 1
[method.fill]
levels = [25, 50, 100]
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "fill-stage")


def test_fill_levels_write_each_new_part_once_and_cells_carry_the_level(workdir, tmp_path):
    run = run_plan(PLAN, workdir, tmp_path, "fill")
    m = json.loads((run / "manifest.json").read_text())
    stages = m["stages"]
    # two targets (the pool's own file, the iSCSI LUN), three levels: 16 MiB, then 16 more, then the last 32
    assert sorted((s["target"], s["level"], s["offset"], s["bytes"]) for s in stages) == sorted(
        (t, lv, off, n) for t in ("local", "iscsi") for lv, off, n in ((25, 0, 16 * MIB), (50, 16 * MIB, 16 * MIB),
                                                                       (100, 32 * MIB, 32 * MIB)))
    # what fio itself wrote, read from its own output
    assert all(s["written_bytes"] == s["bytes"] for s in stages)
    for s in stages:
        out = json.loads((run / "raw" / f"fill{s['level']}__{s['target']}.json").read_text())
        assert sum(j["write"]["io_bytes"] for j in out["jobs"]) == s["bytes"]
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert [(r["fill"], r["configuration"]) for r in rows] == [
        (lv, c) for lv in ("25", "50", "100") for c in ("local", "iscsi")]
    assert all(float(r["iops"]) > 0 and r["errors"] == "0" for r in rows)
    # the cells at 25 % measure inside the filled 16 MiB: each stream's region ends there
    job = next((run / "raw").glob("tr3808-4k__iscsi__h1s2q4__fill25__r1.measure*.fio")).read_text()
    ends = [int(a.split("=")[1]) + int(b.split("=")[1]) for a, b in zip(
        [ln for ln in job.splitlines() if ln.startswith("offset=")],
        [ln for ln in job.splitlines() if ln.startswith("size=")])]
    assert len(ends) == 2 and max(ends) <= 16 * MIB
    md = (run / "report.md").read_text()
    assert "fill 25 % · 1×2×4=8" in md and "fill 100 % · 1×2×4=8" in md
    table = list(csv.DictReader((run / "tables" / "stage-iops-tr3808-4k.csv").open()))
    assert [r["stage"] for r in table if r["configuration"] == "iscsi"] == ["fill 25 %", "fill 50 %", "fill 100 %"]
    html = (run / "report.html").read_text()
    assert "Against the stage" in html and "The seed's claims, tested" in html
    assert html.count("IOPS at fill 100 % against fill 25 %") >= 2  # the stage's sentences
    # the seed's claim judged on the last fill level against the first: one repeat a side cannot be tested
    seed = md.split("## The seed's claims, tested")[1]
    assert "| IOPS fell as the LUNs filled. | IOPS: every configuration at the last fill level against the first: " \
           "fewer IOPS (a difference the test calls) | **not testable here** |" in seed
    assert 'class="verdict not-testable-here"' in html
