"""The capacity section and its charts from a real ladder (tests/data/golden/capacity-lab: 32 servers of 32 ms,
1,000 IOPS at saturation; direct and NBD; `tests/lab/test_capacity_lab.py` made it): the knee and capacity in words
and in the table, latency drawn against achieved IOPS per configuration, `report --json`'s capacity, and no section
for a run without a ladder."""

from __future__ import annotations

import shutil

import pytest

from conftest import DATA
from protolab.analysis.capacity import ladders
from protolab.report import tables
from protolab.report.report_cli import report_json
from protolab.report.sections import SECTIONS
from protolab.report.sections.capacity_section import CapacitySection
from protolab.results.rundir import RunDir


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    run = tmp_path_factory.mktemp("capacity") / "capacity-lab"
    shutil.copytree(DATA / "golden" / "capacity-lab" / "run", run)
    rd = RunDir.open(run, write=False)
    return rd, tables.build(rd.manifest(), rd.records())


def test_the_section_states_each_configurations_knee_and_capacity_with_its_interval(golden):
    _, data = golden
    section = CapacitySection()
    m = section.build(data)
    assert m.objective == "p90 ≤ 96 ms" and [s[2] for s in m.sentences] == ["direct", "nbd"]
    # direct: every 950 IOPS repeat sits above the 500 IOPS floor (31,959–32,043 µs); the objective met at 950 in
    # every repeat, at 1,025 in one (p90 86.5 ms) of three: the median repeat's capacity is 950
    assert m.rows == [
        ["4k-randread", "1×4×64=256", "direct", "950 · 943", "950", "950–1,025, the range of 3 repeats: 75.0 % coverage",
         "1,025", "5 (2)"],
        ["4k-randread", "1×4×64=256", "nbd", "950 · 938", "950", "950–950, the range of 3 repeats: 75.0 % coverage",
         "1,025", "5 (2)"]]
    words = m.sentences[0][3]
    assert words.startswith("Its latency leaves its floor at 950 IOPS offered (943 achieved): from there every step's "
                            "mean latency lies above the floor's 31,959–32,043 µs")
    assert ("the highest offered rate meeting p90 ≤ 96 ms is 950 IOPS (950–1,025, the range of 3 repeats: 75.0 % "
            "coverage); the next step, 1,025 IOPS, is not reached in at least half of the repeats") in words
    assert words.endswith("(The lab's device model saturates at 1,000 IOPS: parallelism / service time.)")
    md = "\n".join(section.markdown(m))
    assert "| workload | point | configuration | knee (offered · achieved IOPS) |" in md
    assert "`tables/capacity-p90-4k-randread-1-4-64-256.csv`" in md
    # after the summary and the seed's claims, before the plan
    names = [s.name for s in SECTIONS]
    assert names.index("summary") < names.index("capacity") < names.index("plan")


def test_latency_is_drawn_against_achieved_iops_one_line_per_configuration(golden):
    from protolab.report.figures import draw

    _, data = golden
    charts = [c for c in data.charts if c.section == "capacity"]
    assert [(c.id, c.kind) for c in charts] == [("capacity-p90-4k-randread-1-4-64-256", "xy"),
                                                ("capacity-mean-4k-randread-1-4-64-256", "xy")]
    p90, mean = charts
    assert p90.hline == pytest.approx(96_000) and p90.xlabel == "achieved IOPS (median of the repeats)"
    direct = next(s for s in p90.series if s.name == "direct")
    # each point a step, its median over repeats: achieved IOPS on x, p90 on y
    assert direct.x[:2] == pytest.approx([523.5, 942.53], abs=0.01) and direct.values[:2] == [32112.64, 56360.96]
    rows = [r for r in p90.table if r["configuration"] == "direct"]
    assert [(r["offered IOPS"], r["meets p90 ≤ 96 ms"], r["kept up"], r["step"]) for r in rows] == [
        (500, "3/3", "3/3", "ladder"), (950, "3/3", "3/3", "ladder"), (1025, "1/3", "3/3", "search"),
        (1100, "0/3", "0/3", "search"), (1250, "0/3", "0/3", "ladder")]
    svg = draw(p90, None, data.configurations, png=False).svg
    assert 'data-series="direct"' in svg and 'data-series="nbd"' in svg and "achieved IOPS" in svg
    # the relative tables speak of latency, not service time: the ladder is open loop
    assert not tables.is_closed_loop(data.plan, "4k-randread")


def test_report_json_carries_each_ladder_and_the_offered_rate(golden):
    rd, data = golden
    rd.report_data = data
    doc = report_json(rd, rd.path / "report.html")
    direct, nbd = doc["capacity"]
    assert (direct["configuration"], direct["point"], direct["objective"]) == ("direct", {"load": 0}, "p90 ≤ 96 ms")
    assert direct["knee"]["offered"] == 950 and direct["knee"]["below"] == 500
    assert direct["capacity"] == {"iops": 950.0, "low": 950.0, "high": 1025.0, "coverage": 0.75,
                                  "per_repeat": [950.0, 950.0, 1025.0], "next_step": 1025, "at_least": False,
                                  "below_ladder": False}
    assert [s["offered"] for s in nbd["steps"]] == [500, 950, 1025, 1100, 1250]
    assert {r["point"]["rate"] for r in doc["rows"]} == {500, 950, 1025, 1100, 1250}


def test_a_run_without_a_ladder_has_no_capacity_section(tmp_path):
    run = tmp_path / "v1"
    shutil.copytree(DATA / "v1-run", run)
    rd = RunDir.open(run, write=False)
    data = tables.build(rd.manifest(), rd.records())
    assert data.capacity is None and CapacitySection().build(data) is None
    assert ladders(rd.records(), ladder=(1,), percentile_key="p99", limit_us=1.0, refine=1) == []
