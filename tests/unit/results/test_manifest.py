"""The manifest's one writer (results.manifest.Events) and its typed reading; stored plans migrated by version."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import DATA
from protolab.plan.migrate import PLAN_FORMAT, migrate
from protolab.results.manifest import Manifest
from protolab.results.rundir import RunDir

V1 = DATA / "v1-run"


@pytest.fixture
def rd(tmp_path) -> RunDir:
    return RunDir.create(tmp_path / "results", "m", {"status": "running", "plan_format": PLAN_FORMAT,
                                                     "cells_done": 0, "last_seq": 0, "sessions": []})


def _disk(rd: RunDir) -> dict:
    return json.loads((rd.path / "manifest.json").read_text())


def test_a_session_from_start_to_end_in_events(rd):
    ev = rd.events
    assert ev.session_started(12, {"fio_version": "fio-3.33"}) == 1
    ev.phase("testbed up")
    ev.testbed_up({"kind": "lab", "prefix": "pl"})
    ev.targets({"a": "lab:iscsi"})
    ev.window_started(1, "w__a__h1s1q1__r1", 1)
    ev.cell_measured(1)
    ev.stage_done([{"fill": 25, "bytes": 1024}], 1)
    ev.repeats_stopped({"w__a": "interval within 3 %"})
    ev.session_ended(1, "interrupted", None, 1)
    m = Manifest.model_validate(_disk(rd))  # each event was on disk as soon as it returned
    assert (m.status, m.phase, m.cells_done, m.last_seq) == ("interrupted", "testbed up", 1, 1)
    assert m.testbed == {"kind": "lab", "prefix": "pl"} and m.targets == {"a": "lab:iscsi"}
    assert m.measuring == {"seq": 1, "cell_id": "w__a__h1s1q1__r1", "session": 1}
    assert m.stages == [{"fill": 25, "bytes": 1024, "session": 1}]
    [s] = m.sessions
    assert (s.session, s.how, s.cells_planned, s.cells_measured) == (1, "interrupted", 12, 1) and s.ended
    assert ev.session_started(11, {}) == 2  # resume: a second session, the run running again
    ev.window_interrupted({"seq": 2, "cell_id": "x", "session": 1})
    ev.measured_all()
    ev.session_ended(2, "complete", None, 11)
    m = rd.typed_manifest()
    assert (m.status, m.phase, [s.how for s in m.sessions]) == ("complete", "done", ["interrupted", "complete"])
    assert m.interrupted_windows == [{"seq": 2, "cell_id": "x", "session": 1}] and m.ended


def test_a_failed_session_keeps_its_error(rd):
    rd.events.session_started(1, {})
    rd.events.session_ended(1, "failed", "cell x: fio failed", 0)
    assert rd.typed_manifest().error == "cell x: fio failed" and _disk(rd)["status"] == "failed"


def test_a_schema_1_manifest_reads_typed(tmp_path):
    run = tmp_path / "v1"
    shutil.copytree(V1, run)
    m = RunDir.open(run).typed_manifest()
    assert m.schema_version == 1 and m.plan_format == 1 and m.sessions == [] and m.plan_text


def test_an_older_stored_plan_is_migrated_by_version():
    old = {"name": "x", "workloads": [{"name": "w", "read_pct": 70}], "method": {"duration": 60}}
    new = migrate(old, 1)
    assert new["workloads"][0]["arrivals"] == "uniform" and new["workloads"][0]["read_pct"] == 70
    assert new["method"]["interval"] == 1 and new["method"]["duration"] == 60
    assert new["seed_findings"] == [] and new["stage"] is None
    assert migrate(old, PLAN_FORMAT) == old  # today's format is left as it is


def test_a_stored_fill_in_the_method_migrates_to_the_stage():
    old = {"name": "x", "method": {"duration": 60, "fill": {"levels": [10, 50], "block_size": 1048576}},
           "stage": None}
    new = migrate(old, 2)
    assert "fill" not in new["method"] and new["stage"] == {"age": None, "fill": {"levels": [10, 50],
                                                                                  "block_size": 1048576}}
    aged = migrate({**old, "stage": {"age": {"duration": 30}}}, 2)
    assert aged["stage"] == {"age": {"duration": 30}, "fill": {"levels": [10, 50], "block_size": 1048576}}
    none = migrate({"name": "x", "method": {"fill": None}, "stage": {"age": {"duration": 30}}}, 2)
    assert none["stage"] == {"fill": None, "age": {"duration": 30}} and "fill" not in none["method"]


def test_a_run_stored_before_plan_formats_resumes_as_the_same_plan(tmp_path):
    """emc-fill-aging stored by protolab before plan formats ([method.fill], no plan_format): its plan text,
    loaded today, is the plan its stored dump migrates to."""
    from protolab.run.resume import differences, resumable

    run = tmp_path / "emc"
    shutil.copytree(DATA / "golden" / "emc-fill-aging-quick" / "run", run)
    rd = RunDir.open(run)
    m = rd.manifest()
    assert "plan_format" not in m and m["plan"]["method"]["fill"]["levels"] == [10, 25, 50, 100]
    rd._write_fields(status="interrupted")  # a complete run is not resumable; the plan comparison is the point
    plan, _, _ = resumable(rd)
    assert plan.fill.levels == [10, 25, 50, 100]
    assert [d for d in differences(rd, plan, m["provenance"]["fio_version"], m["testbed"])
            if d.startswith("plan")] == []


def test_a_plan_stored_before_controller_cpu_priority_seed_scale_and_hypervisor_is_the_same_plan():
    """Those fields came after the first stored plans too: the v1 capture's plan (no plan format) migrates to
    exactly what its text loads to today."""
    from protolab.plan.load import load_plan_text

    m = json.loads((V1 / "manifest.json").read_text())
    stored = m["plan"]
    assert "cpu_priority" not in stored["method"] and "controller" not in stored["configurations"][0]
    assert not {"seed", "scale", "hypervisor"} & set(stored)
    assert migrate(stored, 1) == load_plan_text(m["plan_text"]).model_dump(mode="json")
    assert migrate({**stored, "method": {**stored["method"], "cpu_priority": "high"}}, 1)["method"][
        "cpu_priority"] == "high"  # a stored value is kept


def test_a_schema_2_run_of_d28c3cf_opens_and_keeps_its_plan(tmp_path):
    """Written by protolab d28c3cf (a fill plan, adaptive repeats, an interrupted window, resumed once)."""
    from protolab.plan.load import load_plan_text
    from protolab.run.resume import differences

    run = tmp_path / "v2"
    shutil.copytree(DATA / "v2-run", run)
    rd = RunDir.open(run)
    m = rd.typed_manifest()
    assert m.schema_version == 2 and m.plan_format == 1 and [s.how for s in m.sessions] == ["interrupted", "complete"]
    assert m.measuring["seq"] == 5 and [w["seq"] for w in m.interrupted_windows] == [3]
    assert [(s["level"], s["session"]) for s in m.stages] == [(50, 1), (100, 1), (100, 2)]
    plan = load_plan_text(m.plan_text)
    assert [d for d in differences(rd, plan, "fio-3.33", {"kind": "fake"}) if d.startswith("plan")] == []
