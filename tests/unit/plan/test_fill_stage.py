"""The fill stage: plan syntax and its refusals, expansion and run order, the session's fill before each
level (fake fio), resume's identity of a cell, and the report keeping levels apart (x = fill level)."""

from __future__ import annotations

import csv
import re
import subprocess
import sys

import pytest

from fakes import PLAN, FakeFio, FakeTestbed, _order
from protolab.errors import PlanError
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.plan.stages import filled_bytes
from protolab.run import Study
from protolab.run.schedule import schedule

FILL = PLAN.replace("prepare = false\n", "") + "[stage.fill]\nlevels = [25, 50, 100]\n"


def _plan(text):
    return load_plan_text(text, source="p.toml")


def test_fill_levels_expand_outermost_with_the_level_in_each_cell(tmp_path):
    plan = _plan(FILL.format(dir=tmp_path))
    cells = expand(plan)
    assert len(cells) == 3 * 2 * 2 * 3  # levels × load points × configurations × repeats
    assert [c.stage.value for c in cells[:12]] == [25] * 12 and cells[12].stage.value == 50
    assert cells[0].id == "tr3808-4k__a__h1s1q1__fill25__r1"
    assert len({c.id for c in cells}) == len(cells)
    assert plan.method.prepare is False  # the fill writes the target; prepare would fill it all at once
    assert "fill to 25, 50, 100 %" in plan.method_summary()


@pytest.mark.parametrize("extra, words", [
    ("restore = true\n", "fill and restore = true cannot go together"),
    ("prepare = true\n", "fill and prepare = true cannot go together"),
])
def test_fill_refuses_restore_and_prepare_in_one_line(tmp_path, extra, words):
    text = PLAN.replace("prepare = false\n", extra).format(dir=tmp_path) + "[method.fill]\nlevels = [10, 50]\n"
    with pytest.raises(PlanError) as e:
        _plan(text)
    msg = str(e.value)
    assert words in msg and "\n" not in msg and msg.startswith("p.toml")


@pytest.mark.parametrize("levels, words", [("[50, 25]", "must ascend"), ("[10, 101]", "from 1 to 100"),
                                           ("[]", "list of whole percentages"), ("[10.5]", "whole percentage")])
def test_bad_fill_levels_say_what_to_write(tmp_path, levels, words):
    text = PLAN.replace("prepare = false\n", "").format(dir=tmp_path) + f"[stage.fill]\nlevels = {levels}\n"
    with pytest.raises(PlanError) as e:
        _plan(text)
    assert words in str(e.value) and "stage.fill" in str(e.value)


def test_filled_bytes_are_whole_mib_of_the_capacity():
    mib = 1024**2
    assert filled_bytes(256 * mib, 25) == 64 * mib
    assert filled_bytes(256 * mib, 10) == 25 * mib  # 25.6 MiB down to whole MiB
    assert filled_bytes(256 * mib + 5, 100) == 256 * mib + 5
    assert filled_bytes(3 * mib, 1) == mib  # never below one MiB


def test_the_session_fills_each_level_once_before_its_cells_and_records_it(tmp_path):
    text = FILL.format(dir=tmp_path)
    plan = _plan(text)
    events: list[str] = []
    fio = FakeFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    fills = [e for e in events if e.startswith("measure fill")]
    assert fills == ["measure fill25__a", "measure fill50__a", "measure fill100__a"]  # one target, a and b share it
    firsts = [events.index(f) for f in fills]
    ids = _order(events)
    assert ids[0] == "fill25__a" and ids[1].endswith("__fill25__r1")
    assert events.index("measure tr3808-4k__a__h1s1q1__fill50__r1") > firsts[1] > \
        events.index("measure tr3808-4k__b__h1s2q1__fill25__r3")
    m = rd.manifest()
    mib = 1024**2
    size = 256 * mib  # method.data_size
    assert [(s["level"], s["offset"], s["bytes"]) for s in m.stages] == [
        (25, 0, 64 * mib), (50, 64 * mib, 64 * mib), (100, 128 * mib, size - 128 * mib)]
    assert m.dimensions == ["fill"]
    jobs = sorted((rd.path / "jobs").glob("fill*.fio"))
    assert len(jobs) == 3
    job50 = (rd.path / "jobs" / "fill50__a.fio").read_text()
    assert "rw=write" in job50 and f"offset={64 * mib}" in job50 and f"size={64 * mib}" in job50
    rows = list(csv.DictReader((rd.path / "cells.csv").open()))
    assert len(rows) == 36 and [r["fill"] for r in rows[::12]] == ["25", "50", "100"]
    recs = rd.records()
    assert recs[0].coords["fill"] == 25 and recs[0].dimensions == {"fill": 25}
    # the cells at 25 % measure on the filled quarter only: each stream's region lies inside it
    measure = (rd.path / "raw" / "tr3808-4k__b__h1s2q1__fill25__r1.measure.local1.fio").read_text()
    sizes = [int(x) for x in re.findall(r"^size=(\d+)", measure, re.M)]
    offsets = [int(x) for x in re.findall(r"^offset=(\d+)", measure, re.M)]
    assert len(sizes) == 2 and max(o + s for o, s in zip(offsets, sizes)) <= 64 * mib


def test_resume_knows_a_cell_by_its_level(tmp_path):
    text = FILL.format(dir=tmp_path)
    plan = _plan(text)
    events: list[str] = []
    fio = FakeFio(events, fail={"tr3808-4k__a__h1s1q1__fill50__r2"})
    study = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
                  testbed=FakeTestbed(plan, fio, events))
    with pytest.raises(Exception):
        study.run()
    rd = study.rundir
    left = [p.cell.id for p in schedule(plan, rd.records)]
    assert left[0] == "tr3808-4k__a__h1s1q1__fill50__r2" and all("fill25" not in i for i in left)
    assert len(left) == 36 - len([r for r in rd.records() if not r.failed])
    events.clear()
    Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
          testbed=FakeTestbed(plan, fio, events)).resume(rd)
    # a new session starts from an empty target (the lab's pool does not outlive a session): filled to 50 % at once
    assert [e for e in events if e.startswith("measure fill")] == ["measure fill50__a", "measure fill100__a"]
    assert [(s["level"], s["offset"], s["session"]) for s in rd.manifest().stages][-2:] == \
        [(50, 0, 2), (100, 128 * 1024**2, 2)]


def test_adaptive_repeats_run_per_fill_level(tmp_path):
    text = FILL.format(dir=tmp_path).replace("repeats = 3", "repeats = { min = 2, max = 3, until_agree_pct = 50 }")
    plan = _plan(text)
    events: list[str] = []
    fio = FakeFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    ids = [r.cell_id for r in rd.records()]
    assert len(ids) == 3 * 2 * 2 * 2  # the captured windows agree: two repeats at every level
    assert ids[7].endswith("fill25__r2") and ids[8].endswith("fill50__r1")


def test_report_keeps_fill_levels_apart_and_draws_them_on_the_x_axis(tmp_path):
    text = FILL.format(dir=tmp_path)
    plan = _plan(text)
    events: list[str] = []
    fio = FakeFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    from protolab.report.tables import build

    data = build(rd.manifest(), rd.records())
    assert len(data.rows) == 3 * 2 * 2  # levels × load points × configurations: never pooled across levels
    assert {r.load_label for r in data.rows if r.configuration == "a"} >= {"fill 25 % · 1×1×1=1",
                                                                            "fill 100 % · 1×2×1=2"}
    stage = [c for c in data.charts if c.section == "stages"]
    assert [c.id for c in stage] == ["stage-iops-tr3808-4k", "stage-lat_mean_us-tr3808-4k"]
    iops = stage[0]
    assert iops.x == ["fill 25 %", "fill 50 %", "fill 100 %"] and len(iops.series) == 4  # 2 configs × 2 loads
    assert all(v is not None for s in iops.series for v in s.values)
    said = [f.text for f in data.findings if f.kind == "stage"]
    assert len(said) == 4 and all("IOPS at fill 100 % against fill 25 %" in t for t in said)
    # every window is the same captured document: the test finds no difference (3 repeats a side)
    assert all("no clear difference" in t for t in said)
    assert all(re.search(r"; it could have detected [0-9.]+ % fewer or [0-9.]+ % more \(80 % power\)\.$", t)
               for t in said)


def test_validate_shows_the_fill_and_its_cells(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(FILL.format(dir=tmp_path))
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "validate", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "36" in p.stdout and "fill to 25, 50, 100 %" in p.stdout


def test_a_fill_level_sentence_names_the_change_with_its_interval():
    from types import SimpleNamespace as NS

    from protolab.plan.coordinates import Point
    from protolab.report.stagecharts import stage_findings

    points = [Point((("fill", lv), ("load", 0)), f"fill {lv} % · 1×1×1=1") for lv in (10, 100)]
    recs = [NS(coords={"fill": lv, "load": 0}, hosts=1, streams_per_host=1, oio_per_stream=1, total_oio=1)
            for lv in (10, 100)]
    rows = [NS(workload="w", configuration="a", point=points[0], load_label=points[0].label,
               samples={"iops": [1000.0, 1010.0, 990.0, 1005.0]}),
            NS(workload="w", configuration="a", point=points[1], load_label=points[1].label,
               samples={"iops": [700.0, 707.0, 693.0, 702.0]})]
    [f] = stage_findings(NS(records=recs, rows=rows, workloads=["w"]))
    assert f.kind == "stage" and f.metric == "iops"
    assert f.text.startswith("w: a at 1×1×1=1, IOPS at fill 100 % against fill 10 %: 30 % (")
    assert "fewer (95 % CI; corrected p = " in f.text
    # the smallest difference this test could have called: 4 repeats a side with ~0.8 % spread, a few %
    [(down, up)] = re.findall(r"; it could have detected ([0-9.]+) % fewer or ([0-9.]+) % more \(80 % power\)\.$",
                              f.text)
    assert 2.0 <= float(up) < 5.0 and f.detectable == ()  # a called change: no "no clear difference" figure
    assert float(down) == pytest.approx(100 * (1 - 1 / (1 + float(up) / 100)), abs=0.06)  # one ratio, both ways
    same = [rows[0], NS(**{**vars(rows[1]), "samples": {"iops": [1000.0, 990.0, 1012.0, 1001.0]}})]
    [g] = stage_findings(NS(records=recs, rows=same, workloads=["w"]))
    assert "no clear difference" in g.text and g.detectable[0][0] == "iops"
    up = g.detectable[0][1]
    assert g.text.endswith(f"; it could have detected {100 - 100 / (1 + up / 100):.1f} % fewer or {up:.1f} % more "
                           "(80 % power).")


def test_a_fill_on_a_file_that_holds_data_needs_the_opt_in(tmp_path):
    from protolab.errors import TargetError

    data = tmp_path / "data.dat"
    data.write_bytes(b"the user's data" * 100)
    text = FILL.format(dir=tmp_path)
    plan = _plan(text)
    events: list[str] = []
    fio = FakeFio(events)
    with pytest.raises(TargetError) as e:
        Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
              testbed=FakeTestbed(plan, fio, events)).run()
    assert "is a non-empty file protolab did not create" in str(e.value) and "allow_overwrite = true" in str(e.value)
    assert events == [] and data.read_bytes() == b"the user's data" * 100  # nothing ran, nothing written
    assert not (tmp_path / "r").exists()
    allowed = text.replace('url = "', 'allow_overwrite = true\nurl = "')
    plan = _plan(allowed)
    rd = Study(plan, allowed, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    assert [s["level"] for s in rd.manifest().stages] == [25, 50, 100]


def test_aging_at_one_fill_level_ages_only_that_levels_cells(tmp_path):
    """S4: the fill sweep, and the aging at 25 % fill — one plan; the other levels are measured once."""
    text = FILL.format(dir=tmp_path).replace("repeats = 3", "repeats = 1") \
        + '[stage.age]\nduration = "6s"\nevery = "2s"\nat_fill = 50\n'
    plan = _plan(text)
    cells = expand(plan)
    by_level = {lvl: [c for c in cells if c.stage.value == lvl] for lvl in (25, 50, 100)}
    assert [len(v) for v in by_level.values()] == [4, 12, 4]  # 2 load points × 2 configurations (× 3 steps at 50)
    assert all(c.step("age") is None for c in by_level[25] + by_level[100])
    assert [c.step("age").index for c in by_level[50][:3]] == [0, 1, 2]  # one configuration's steps follow each other
    assert by_level[50][0].id == "tr3808-4k__a__h1s1q1__fill50__r1__a0" and len({c.id for c in cells}) == len(cells)
    assert "aged 6s at fill 50 %" in plan.stage.age.summary()
    with pytest.raises(PlanError) as e:
        _plan(text.replace("at_fill = 50", "at_fill = 30"))
    assert "stage.age.at_fill = 30: not one of stage.fill's levels" in str(e.value)


def test_a_fill_written_in_the_older_method_form_is_the_same_stage(tmp_path):
    old = load_plan_text(PLAN.replace("prepare = false\n", "").format(dir=tmp_path) + "[method.fill]\nlevels = [25, 50, 100]\n")
    new = load_plan_text(FILL.format(dir=tmp_path))
    assert old == new and old.fill.levels == [25, 50, 100] and old.method.prepare is False
    assert [c.id for c in expand(old)] == [c.id for c in expand(new)]
    twice = FILL.format(dir=tmp_path).replace("[stage.fill]", "[method.fill]\nlevels = [10]\n[stage.fill]")
    with pytest.raises(PlanError, match="fill is given twice"):
        load_plan_text(twice)
