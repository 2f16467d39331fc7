"""Adaptive repeats: more windows only while a cell's IOPS are wider than asked; interleaving and resume kept."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fakes import PLAN, FakeFio, FakeTestbed, _order
from protolab.analysis.repeat_rule import mean_interval_pct, next_repeat, spread_pct
from protolab.errors import ProtolabError
from protolab.plan.load import load_plan_text
from protolab.results.rundir import RunDir
from protolab.run import Study
from protolab.run.resume import resumable


def test_interval_and_spread_numbers():
    # mean 100, sd 1: t(0.975, 2) = 4.303 → ±4.303 × 1/√3 = ±2.48 %
    assert mean_interval_pct([99, 100, 101]) == pytest.approx(2.484, abs=1e-3)
    assert mean_interval_pct([100]) == math.inf and spread_pct([100]) == math.inf
    assert spread_pct([100, 110]) == pytest.approx(100 * 10 / 105)
    assert next_repeat([100, 104], minimum=2, maximum=3, agree_pct=5).reason == \
        "stopped after 2: repeats 3.9 % apart, within 5 %"
    d = next_repeat([100, 110], minimum=2, maximum=3, agree_pct=5)
    assert d.more and d.reason == "repeat 3: repeats 9.5 % apart, more than 5 %"
    d = next_repeat([100, 110, 104], minimum=2, maximum=3, agree_pct=5)
    assert not d.more and d.reason == "stopped at the maximum of 3: repeats 9.6 % apart, more than 5 %"
    assert next_repeat([100], minimum=2, maximum=3, ci_pct=3).reason == "repeat 2 of at least 2"
    d = next_repeat([100, 101], minimum=2, maximum=10, ci_pct=3, agree_pct=5)
    assert d.more and d.reason == "repeat 3: 95 % interval ±6.3 % wider than ±3 %"


class VaryingFio(FakeFio):
    """The captured window, with I/O counts scaled by a factor per (configuration, repeat)."""

    def __init__(self, events, factors, **kw):
        super().__init__(events, **kw)
        self.factors = factors  # {(configuration, repeat): factor}

    def run_job(self, job, output, *, on_status=None, **kw):
        text = super().run_job(job, output, **kw)
        cell = Path(job).name.split(".")[0]
        _, config, _, rep = cell.split("__")
        f = self.factors.get((config, int(rep[1:])), 1.0)
        doc = json.loads(text)
        for j in doc["jobs"]:
            for d in ("read", "write"):
                j[d]["total_ios"] = round(j[d]["total_ios"] * f)
        text = json.dumps(doc)
        Path(output).write_text(text)
        if on_status is not None:
            on_status(doc)  # the status a real fio writes is the scaled one
        return text


ADAPTIVE = PLAN.replace("repeats = 3", "repeats = {{ min = 2, max = 4, until_agree_pct = 5 }}")


@pytest.fixture
def study(tmp_path):
    text = ADAPTIVE.format(dir=tmp_path)
    plan = load_plan_text(text)

    def make(events, factors, **kw):
        fio = VaryingFio(events, factors, **kw)
        return Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
                     testbed=FakeTestbed(plan, fio, events))
    return make


# a agrees at once; b disagrees (10 %), then its third lands between: still 9.5 % apart, so a fourth (the maximum)
FACTORS = {("b", 2): 1.10, ("b", 3): 1.05, ("b", 4): 1.04}


def test_more_repeats_only_where_the_repeats_disagree(study):
    events: list[str] = []
    rd = study(events, FACTORS).run()
    ids = _order(events)
    first = [i for i in ids if "h1s1q1" in i]
    # interleaved: a b a b, then only b needs more (at each load point)
    assert first == ["tr3808-4k__a__h1s1q1__r1", "tr3808-4k__b__h1s1q1__r1", "tr3808-4k__a__h1s1q1__r2",
                     "tr3808-4k__b__h1s1q1__r2", "tr3808-4k__b__h1s1q1__r3", "tr3808-4k__b__h1s1q1__r4"]
    assert len(ids) == 2 * 6 and ids[6] == "tr3808-4k__a__h1s2q1__r1"  # the second load point follows
    recs = {r.cell_id: r for r in rd.records()}
    assert recs["tr3808-4k__a__h1s1q1__r1"].repeat_reason == "repeat 1 of at least 2"
    assert recs["tr3808-4k__b__h1s1q1__r3"].repeat_reason == "repeat 3: repeats 9.5 % apart, more than 5 %"
    assert recs["tr3808-4k__b__h1s1q1__r4"].repeat_reason == "repeat 4: repeats 9.5 % apart, more than 5 %"
    m = rd.manifest()
    assert m.repeats_stopped == {
        "tr3808-4k__a__h1s1q1": "stopped after 2: repeats 0.0 % apart, within 5 %",
        "tr3808-4k__b__h1s1q1": "stopped at the maximum of 4: repeats 9.6 % apart, more than 5 %",
        "tr3808-4k__a__h1s2q1": "stopped after 2: repeats 0.0 % apart, within 5 %",
        "tr3808-4k__b__h1s2q1": "stopped at the maximum of 4: repeats 9.6 % apart, more than 5 %"}
    assert m.status == "complete" and m.cells_done == 12 and m.cells_total == 8


def test_s5_rule_a_third_only_when_the_first_two_disagree(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = { min = 2, max = 3, until_agree_pct = 5 }")
    plan = load_plan_text(text)
    events: list[str] = []
    fio = VaryingFio(events, {("a", 2): 0.9})
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    counts = {}
    for r in rd.records():
        counts[(r.configuration, r.load_index)] = counts.get((r.configuration, r.load_index), 0) + 1
    assert counts == {("a", 0): 3, ("b", 0): 2, ("a", 1): 3, ("b", 1): 2}


def test_resume_continues_the_adaptive_rounds_without_measuring_twice(study):
    events: list[str] = []
    # b's third repeat (an adaptive one) fails: the run stops with 4 + 1 failed
    with pytest.raises(ProtolabError):
        study(events, FACTORS, fail={"tr3808-4k__b__h1s1q1__r3"}).run()
    rd_path = next(p for p in (Path(study(events, {}).results_root)).iterdir())
    rd = RunDir.open(rd_path)
    assert len(rd.records()) == 4
    plan, text, source = resumable(rd)
    events2: list[str] = []
    fio = VaryingFio(events2, FACTORS)
    Study(plan, text, source, results_root=rd_path.parent, fio=fio,
          testbed=FakeTestbed(plan, fio, events2)).resume(rd)
    again = _order(events2)
    assert again[:2] == ["tr3808-4k__b__h1s1q1__r3", "tr3808-4k__b__h1s1q1__r4"]
    assert not set(again) & set(_order(events))
    rd = RunDir.open(rd_path)
    assert len(rd.records()) == 12 and rd.manifest().status == "complete"
    assert rd.manifest().repeats_stopped["tr3808-4k__b__h1s1q1"].startswith("stopped at the maximum of 4")


def test_repeats_table_errors_are_one_line():
    from protolab.errors import PlanError

    for table, expect in [
        ("{ min = 2, max = 10 }", "method.repeats: give until_ci_pct or until_agree_pct"),
        ("{ min = 5, max = 3, until_ci_pct = 3.0 }", "method.repeats: min (5) is larger than max (3)"),
        ("{ min = 1, max = 3, until_ci_pct = 3.0 }", "method.repeats: min must be at least 2"),
        ("{ min = 2, max = 3, until_ci_pct = 0 }", "method.repeats: until_ci_pct: Input should be greater than 0"),
        ("{ min = 2, max = 3, until = 3 }", "method.repeats: until: unknown field; use min, max, until_ci_pct"),
        ("{ min = 2, max = 200, until_ci_pct = 3 }", "method.repeats: max: Input should be less than or equal to 100"),
    ]:
        with pytest.raises(PlanError) as e:
            load_plan_text(PLAN.format(dir="/tmp/pla-none").replace("repeats = 3", f"repeats = {table}"))
        assert expect in str(e.value), str(e.value)


def test_a_run_stored_before_the_shape_fields_resumes_as_the_same_plan(tmp_path):
    """A manifest whose workloads lack arrivals, bursts, … (written before them) is not 'a different plan'."""
    from protolab.run.resume import differences

    text = PLAN.format(dir=tmp_path)
    plan = load_plan_text(text)
    events: list[str] = []
    fio = FakeFio(events, fail={"tr3808-4k__b__h1s1q1__r1"})
    with pytest.raises(ProtolabError):
        Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
              testbed=FakeTestbed(plan, fio, events)).run()
    run = next((tmp_path / "r").iterdir())
    m = json.loads((run / "manifest.json").read_text())
    stored = m["plan"]
    for w in stored["workloads"]:
        for k in ("arrivals", "bursts", "think_time", "think_every", "hot_zones", "replay", "trace"):
            del w[k]

    def stored_as(**fields) -> RunDir:  # the manifest as an older protolab (or a hand) left it
        (run / "manifest.json").write_text(json.dumps({**m, **fields}))
        return RunDir.open(run)

    # stored by a protolab of plan format 1, before those fields: migrated by version, the same plan
    del m["plan_format"]  # absent: the oldest format
    assert differences(stored_as(plan=stored), plan, "fio-3.33", {"kind": "fake"}) == []
    # the same fields missing from a plan of today's format: it changed
    assert differences(stored_as(plan=stored, plan_format=2), plan, "fio-3.33", {"kind": "fake"}) == [
        "plan (this protolab reads the stored plan text differently)"]
    stored["workloads"][0]["read_pct"] = 50.0  # a real difference still counts
    assert differences(stored_as(plan=stored, plan_format=1), plan, "fio-3.33", {"kind": "fake"}) == [
        "plan (this protolab reads the stored plan text differently)"]


def test_validate_shows_the_range_of_cells(tmp_path):
    from conftest import run_cli

    plan = tmp_path / "p.toml"
    plan.write_text(ADAPTIVE.format(dir=tmp_path).replace("max = 4", "max = 5"))
    p = run_cli("validate", plan, timeout=60)
    assert p.returncode == 0, p.stderr
    assert ("2 configurations × 1 workloads × 2 load points × 2–5 repeats until the repeats agree within 5 % "
            "= 8–20 cells, about 0.1–0.3 min of measurement") in p.stdout
    assert "a cell whose first 2 repeats already satisfy the rule stops there" in p.stderr
    doc = json.loads(run_cli("validate", "--json", plan, timeout=60).stdout)
    assert (doc["cells"], doc["cells_max"], doc["measurement_s"], doc["measurement_s_max"]) == (8, 20, 8.0, 20.0)
    assert doc["repeats"] == {"min": 2, "max": 5, "until_ci_pct": None, "until_agree_pct": 5.0}
