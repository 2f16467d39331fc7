"""The manifest's one writer (results.manifest.Events) and its typed reading; stored plans migrated by version."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import protolab.results.files as files
from conftest import DATA
from protolab.errors import ProtolabError
from protolab.plan.migrate import PLAN_FORMAT, migrate
from protolab.results.manifest import Events, Manifest, Provenance, RunStart, Window
from protolab.results.rundir import RunDir

V1 = DATA / "v1-run"


@pytest.fixture
def rd(tmp_path) -> RunDir:
    return RunDir.create(tmp_path / "results", "m", RunStart(plan={}, plan_text="", plan_format=PLAN_FORMAT,
                                                             provenance=Provenance()))


def _disk(rd: RunDir) -> dict:
    return json.loads((rd.path / "manifest.json").read_text())


def test_a_session_from_start_to_end_in_events(rd):
    ev = rd.events
    assert ev.session_started(12, Provenance(fio_version="fio-3.33")) == 1
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
    assert m.measuring == Window(seq=1, cell_id="w__a__h1s1q1__r1", session=1)
    assert m.stages == ({"fill": 25, "bytes": 1024, "session": 1},)
    [s] = m.sessions
    assert (s.session, s.how, s.cells_planned, s.cells_measured) == (1, "interrupted", 12, 1) and s.ended
    assert ev.session_started(11, Provenance()) == 2  # resume: a second session, the run running again
    ev.window_interrupted(Window(seq=2, cell_id="x", session=1))
    ended = ev.measured_all()  # the end, recorded before the report is written
    assert rd.manifest().ended == ended and rd.manifest().sessions[-1].ended == ended
    ev.session_ended(2, "complete", None, 11, ended)
    m = rd.manifest()
    assert m.ended == ended and m.sessions[-1].ended == ended  # the report's end is the manifest's
    assert (m.status, m.phase, [s.how for s in m.sessions]) == ("complete", "done", ["interrupted", "complete"])
    assert m.interrupted_windows == (Window(seq=2, cell_id="x", session=1),) and m.ended


def test_a_failed_session_keeps_its_error(rd):
    rd.events.session_started(1, Provenance())
    rd.events.session_ended(1, "failed", "cell x: fio failed", 0)
    assert rd.manifest().error == "cell x: fio failed" and _disk(rd)["status"] == "failed"


def test_a_schema_1_manifest_reads_typed(tmp_path):
    run = tmp_path / "v1"
    shutil.copytree(V1, run)
    m = RunDir.open(run).manifest()
    assert m.schema_version == 1 and m.plan_format == 1 and m.sessions == () and m.plan_text
    assert m.provenance.cpus == 2 and m.targets["nbd-1500"].startswith("nbd via nbd")
    # every key kept as stored (schema 1's lab and cells too), nothing added
    assert m.model_dump(mode="json", exclude_unset=True) == json.loads((run / "manifest.json").read_text())


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
    m = json.loads((run / "manifest.json").read_text())
    assert "plan_format" not in m and m["plan"]["method"]["fill"]["levels"] == [10, 25, 50, 100]
    m["status"] = "interrupted"  # a complete run is not resumable; the plan comparison is the point
    (run / "manifest.json").write_text(json.dumps(m))
    rd = RunDir.open(run)
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
    m = rd.manifest()
    assert m.schema_version == 2 and m.plan_format == 1 and [s.how for s in m.sessions] == ["interrupted", "complete"]
    assert m.model_dump(mode="json", exclude_unset=True) == json.loads((run / "manifest.json").read_text())
    assert m.measuring.seq == 5 and [w.seq for w in m.interrupted_windows] == [3]
    assert [(s["level"], s["session"]) for s in m.stages] == [(50, 1), (100, 1), (100, 2)]
    plan = load_plan_text(m.plan_text)
    assert [d for d in differences(rd, plan, "fio-3.33", {"kind": "fake"}) if d.startswith("plan")] == []


# -- each event, on disk ----------------------------------------------------------------------------------------

PROV = Provenance(protolab="0.1.0", fio_version="fio-3.33", fio_engines=["psync"], fio_path="/fio", kernel="6.1",
                  machine="x86_64", hostname="h", cpu_model="cpu", cpus=2, python="3.11.2")
START = RunStart(plan_source="p.toml", plan={"name": "p"}, plan_text='name = "p"\n', plan_format=2,
                 provenance=PROV, testbed={"kind": "local", "hosts": ["this machine"]}, cells_total=4,
                 dimensions=["fill"])


def _on_disk(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture
def mf(tmp_path):
    """A Events whose clock says t1, t2, … and whose file was started by run_started (at t1)."""
    ticks = iter(f"t{i}" for i in range(1, 100))
    f = Events(tmp_path / "manifest.json", clock=lambda: next(ticks))
    f.run_started("run-1", START)
    return f


def test_run_started_writes_the_whole_start_in_order(mf):
    assert list(_on_disk(mf.path).items()) == [
        ("schema_version", 2), ("run_id", "run-1"), ("dimensions", ["fill"]), ("status", "running"),
        ("phase", "starting"), ("plan_source", "p.toml"), ("plan", {"name": "p"}), ("plan_text", 'name = "p"\n'),
        ("plan_format", 2), ("provenance", PROV.model_dump()), ("started", "t1"), ("ended", None),
        ("cells_total", 4), ("cells_done", 0), ("last_seq", 0), ("testbed", {"kind": "local", "hosts": ["this machine"]}),
        ("sessions", [])]


SESSION1 = {"session": 1, "started": "t2", "ended": None, "how": "running", "cells_planned": 4, "cells_measured": 0,
            "provenance": PROV.model_dump()}

#: (event, what it changes on disk) — each applied after a session started (at t2); the clock then says t3.
EVENTS = [
    (lambda f: f.phase("testbed up"), {"phase": "testbed up"}),
    (lambda f: f.testbed_up({"kind": "lab", "prefix": "pl"}), {"testbed": {"kind": "lab", "prefix": "pl"}}),
    (lambda f: f.agents(["h1 (socket /x)"]), {"agents": ["h1 (socket /x)"]}),
    (lambda f: f.targets({"a": "file via psync: /d"}), {"targets": {"a": "file via psync: /d"}}),
    (lambda f: f.initialised("fill-seq", 30.0, {"a": 100.5}, 1),
     {"initialised": {"workload": "fill-seq", "duration_s": 30.0, "iops": {"a": 100.5}, "session": 1}}),
    (lambda f: f.snapshot_taken(), {"snapshot": "t3"}),
    (lambda f: f.stage_done([{"level": 25, "target": "a"}], 1), {"stages": [{"level": 25, "target": "a", "session": 1}]}),
    (lambda f: f.window_started(7, "w__a__r1", 1), {"measuring": {"seq": 7, "cell_id": "w__a__r1", "session": 1}}),
    (lambda f: f.window_interrupted(Window(seq=3, cell_id="w__a__r2", session=1)),
     {"interrupted_windows": [{"seq": 3, "cell_id": "w__a__r2", "session": 1}]}),
    (lambda f: f.cell_measured(9), {"cells_done": 1, "last_seq": 9}),
    (lambda f: f.repeats_stopped({"w__a": "stopped after 2"}), {"repeats_stopped": {"w__a": "stopped after 2"}}),
    (lambda f: f.measured_all(), {"phase": "report", "status": "complete", "ended": "t3",
                                  "sessions": [{**SESSION1, "ended": "t3", "how": "complete"}]}),
    (lambda f: f.session_ended(1, "complete", None, 3),
     {"status": "complete", "ended": "t3", "phase": "done",
      "sessions": [{**SESSION1, "ended": "t3", "how": "complete", "cells_measured": 3}]}),
    (lambda f: f.session_ended(1, "failed", "cell x: fio failed", None),
     {"status": "failed", "ended": "t3", "error": "cell x: fio failed",
      "sessions": [{**SESSION1, "ended": "t3", "how": "failed"}]}),
]


@pytest.mark.parametrize("event, changes", EVENTS, ids=[str(i) for i in range(len(EVENTS))])
def test_each_event_writes_its_fields_and_nothing_else_in_one_atomic_replace(mf, monkeypatch, event, changes):
    assert mf.session_started(4, PROV) == 1
    before = _on_disk(mf.path)
    assert before["sessions"] == [SESSION1] and before["status"] == "running" and before["ended"] is None
    replaced: list[tuple[str, dict]] = []
    real = os.replace

    def spy(src, dst):  # the new file is whole, beside the old one, before the rename makes it the manifest
        assert Path(dst) == mf.path and Path(src).parent == mf.path.parent and Path(src).name.endswith(".tmp")
        replaced.append((Path(src).name, json.loads(Path(src).read_text())))
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", spy)
    event(mf)
    after = _on_disk(mf.path)
    assert len(replaced) == 1 and replaced[0][1] == after
    assert after == {**before, **changes}
    assert list(after)[:len(before)] == list(before)  # keys keep their places; new ones follow
    assert mf.read().model_dump(mode="json", exclude_unset=True) == after  # what readers see is what is stored
    assert sorted(os.listdir(mf.path.parent)) == ["manifest.json"]  # no temporary file left


def test_a_whole_session_in_order(mf):
    """The events of a run's first session and a resume, in the order the session makes them."""
    seen = []
    for step in (lambda: mf.session_started(4, PROV), lambda: mf.phase("testbed up"),
                 lambda: mf.window_started(1, "c1", 1), lambda: mf.cell_measured(1),
                 lambda: mf.window_started(2, "c2", 1), lambda: mf.session_ended(1, "interrupted", None, 1),
                 lambda: mf.session_started(3, PROV)):
        step()
        m = mf.read()
        seen.append((m.status, m.phase, m.last_seq, m.next_seq, m.unfinished_window and m.unfinished_window.seq,
                     [s.how for s in m.sessions]))
    assert seen == [
        ("running", "starting", 0, 1, None, ["running"]),
        ("running", "testbed up", 0, 1, None, ["running"]),
        ("running", "testbed up", 0, 2, 1, ["running"]),
        ("running", "testbed up", 1, 2, None, ["running"]),
        ("running", "testbed up", 1, 3, 2, ["running"]),
        ("interrupted", "testbed up", 1, 3, 2, ["interrupted"]),
        ("running", "testbed up", 1, 3, 2, ["interrupted", "running"]),
    ]
    assert _on_disk(mf.path)["sessions"][0]["ended"] == "t3" and _on_disk(mf.path)["ended"] is None


def test_the_end_of_another_session_leaves_the_sessions_alone(mf):
    mf.session_started(4, PROV)
    mf.session_ended(5, "failed", "x", 2)  # a number that is not the last session's: only the run's status
    m = mf.read()
    assert m.status == "failed" and m.error == "x" and m.sessions[0].how == "running"


def test_the_manifest_is_never_read_or_written_through_a_symlink(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps({"schema_version": 2}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").symlink_to(victim)
    with pytest.raises(OSError):
        Events(run / "manifest.json").read()
    f = Events(run / "manifest.json")
    f.run_started("run", START)  # replaces the link at the name, never what it points to
    assert json.loads(victim.read_text()) == {"schema_version": 2} and not (run / "manifest.json").is_symlink()


@pytest.mark.parametrize("text, said", [
    ('{"schema_version": 2, "sessions": [{"how": "exploded"}]}', "field 'sessions.0.how'"),
    ('{"schema_version": 2, "measuring": {"cell_id": "c"}}', "field 'measuring.seq'"),
    ('{"schema_version": 2, "provenance": {"cpus": "many"}}', "field 'provenance.cpus'"),
    ('{"schema_version": 2, "status": "won"}', "field 'status'"),
])
def test_a_field_of_the_wrong_type_is_one_line_naming_it(tmp_path, text, said):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ProtolabError) as e:
        RunDir.open(tmp_path)
    assert said in str(e.value) and "the run directory is damaged" in str(e.value) and "\n" not in str(e.value)


def test_a_format_4_plan_gains_no_cpu_limit():
    stored = {"configurations": [{"name": "a", "target": "lab:nbd"}]}
    assert migrate(stored, 4) == {"configurations": [{"nfs": None, "server": None, "sessions": None, "cpu_limit": {},
                                                      "name": "a", "target": "lab:nbd"}]}


def test_a_format_5_plan_gains_the_default_server_and_no_sessions():
    stored = {"configurations": [{"name": "a", "target": "lab:iscsi", "cpu_limit": {}}]}
    assert migrate(stored, 5) == {"configurations": [{"nfs": None, "server": None, "sessions": None, "name": "a",
                                                      "target": "lab:iscsi", "cpu_limit": {}}]}


def test_a_format_7_plan_gains_no_nfs_mount_options():
    stored = {"configurations": [{"name": "a", "target": "lab:nfs", "server": "knfsd"}]}
    assert migrate(stored, 7) == {"configurations": [{"nfs": None, "name": "a", "target": "lab:nfs",
                                                      "server": "knfsd"}]}


def test_add_records_writes_what_add_record_writes_one_by_one(tmp_path):
    """The batch store (synthetic runs, imports): the same records.jsonl and cells.csv bytes and the same count and
    last seq in the manifest as storing each record on its own."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from report_render import make_run

    made = make_run(tmp_path / "a")  # 126 windows, stored by add_records
    recs = made.records()
    one = RunDir.create(tmp_path / "b", "bench", RunStart(plan=made.manifest().plan, plan_text="",
                                                          plan_format=PLAN_FORMAT, provenance=Provenance()))
    for r in recs:
        one.add_record(r)
    assert len(recs) == 126 and made.manifest().cells_done == one.manifest().cells_done == 126
    assert made.manifest().last_seq == one.manifest().last_seq == recs[-1].seq
    for name in ("records.jsonl", "cells.csv"):
        a = (made.path / name).read_text().replace(made.run_id, "RUN")
        b = (one.path / name).read_text().replace(made.run_id, "RUN").replace(one.run_id, "RUN")
        assert a == b, name
    made.add_records([])  # nothing to store: nothing changes
    assert made.manifest().cells_done == 126


def test_a_signal_after_the_session_ended_complete_says_so_not_resume(rd):
    """The last line of a stopped run: resume while cells are left; once the manifest says complete (the signal
    landed after the report), that the run had completed and where its report is."""
    from types import SimpleNamespace

    from protolab.cli import _interrupted

    stop = SimpleNamespace(name="SIGTERM", exit_code=143)
    n = rd.events.session_started(2, Provenance())
    assert str(_interrupted(stop, rd)).endswith(f"'protolab resume {rd.path}' measures the rest")
    rd.events.session_ended(n, "complete", None, 2)
    e = _interrupted(stop, rd)
    assert str(e) == f"interrupted by SIGTERM; the run had completed: its report is in {rd.path}" and e.exit_code == 143
    assert str(_interrupted(stop, None)) == "interrupted by SIGTERM; nothing was measured"
