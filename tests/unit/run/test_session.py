"""The session with a fake testbed and a fake fio: order of cells, resume, and what a signal does, in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import DATA, FakeFio, FakeTestbed, _order
from protolab.errors import ProtolabError
from protolab.results.manifest import Events
from protolab.results.rundir import RunDir
from protolab.run import Study
from protolab.run.resume import resumable
from protolab.run.signals import Stopper


def test_cells_are_interleaved_configurations_within_each_repeat(setup):
    events: list[str] = []
    rd = setup(events).run()
    ids = _order(events)
    assert len(ids) == 2 * 3 * 2
    assert ids[:4] == ["tr3808-4k__a__h1s1q1__r1", "tr3808-4k__b__h1s1q1__r1",
                       "tr3808-4k__a__h1s1q1__r2", "tr3808-4k__b__h1s1q1__r2"]
    assert ids[6] == "tr3808-4k__a__h1s2q1__r1"
    assert [r.cell_id for r in rd.records()] == ids and [r.seq for r in rd.records()] == list(range(1, 13))
    assert events[0] == "up" and events[-2:] == ["agents stopped", "down"]
    m = rd.manifest()
    assert m.status == "complete" and m.sessions[0].how == "complete" and m.cells_done == 12


def test_each_measured_window_starts_the_telemetry_window_first(setup):
    """What holds for a whole window (a link's offloads) is read again for each cell, not once per session."""
    events: list[str] = []
    setup(events).run()
    measured = [i for i, e in enumerate(events) if e.startswith("measure ")]
    assert len(measured) == 12 and events.count("window start") == 12
    assert all(events[i - 1] == "window start" for i in measured)


def test_resume_measures_exactly_the_missing_and_failed_pairs_once(setup):
    events: list[str] = []
    # the 5th window fails: the run stops there, with 4 cells stored
    with pytest.raises(ProtolabError) as e:
        setup(events, fail={"tr3808-4k__a__h1s1q1__r3"}).run()
    assert "'protolab resume " in str(e.value) and "4 cells measured so far are kept" in str(e.value)
    run = next(iter((Path(e.value.args[0].split(": 4 cells")[0].split("(")[-1])).parent.iterdir()))
    rd = RunDir.open(run)
    assert rd.manifest().status == "failed" and len(rd.records()) == 4
    first = set(_order(events))
    # a stored failed record (status failed) is measured again too
    plan, text, source = resumable(rd)
    events2: list[str] = []
    fio = FakeFio(events2)
    study = Study(plan, text, source, results_root=run.parent, fio=fio, testbed=FakeTestbed(plan, fio, events2))
    study.resume(rd)
    again = _order(events2)
    assert not first & set(again), "nothing measured twice"
    assert len(first) + len(again) == 12
    assert again[0] == "tr3808-4k__a__h1s1q1__r3" and again[1] == "tr3808-4k__b__h1s1q1__r3"  # order kept
    rd = RunDir.open(run)
    m = rd.manifest()
    assert m.status == "complete" and [s.how for s in m.sessions] == ["failed", "complete"]
    assert [s.cells_measured for s in m.sessions] == [4, 8]
    recs = rd.records()
    assert len(recs) == 12 and len({r.cell_id for r in recs}) == 12
    assert {r.session for r in recs} == {1, 2} and max(r.seq for r in recs) == 12
    from protolab.report.report_cli import write_report

    write_report(rd, figures=False)
    md = (rd.path / "report.md").read_text()
    assert "## Sessions" in md and "- session 1: " in md and "ended failed, 4 cells in this report" in md
    assert "ended complete, 8 cells in this report" in md


def test_a_write_error_fails_the_run_in_one_line_naming_the_path(setup, monkeypatch):
    from protolab.results import files

    real = files.append_lines

    def full(path, lines):
        if path.name == "records.jsonl":
            path.mkdir(exist_ok=True)  # the real append then fails as a full or read-only disk would: OSError
        return real(path, lines)

    monkeypatch.setattr(files, "append_lines", full)
    monkeypatch.setattr("protolab.results.rundir.append_lines", full)
    events: list[str] = []
    with pytest.raises(ProtolabError) as e:
        setup(events).run()
    msg = str(e.value)
    assert msg.startswith("cannot write ") and "records.jsonl: Is a directory — free space or fix permissions" in msg
    assert "\n" not in msg
    run = Path(msg.split("cannot write ")[1].split("/records.jsonl")[0])
    m = RunDir.open(run).manifest()
    assert m.status == "failed" and "Is a directory" in m.error and events[-1] == "down"


def test_a_failed_record_is_measured_again_on_resume(setup, tmp_path):
    events: list[str] = []
    rd = setup(events).run()
    # mark one stored record failed (as a window whose job ended with an error is stored)
    lines = (rd.path / "records.jsonl").read_text().splitlines()
    doc = json.loads(lines[2])
    doc["status"] = "failed"
    lines[2] = json.dumps(doc)
    (rd.path / "records.jsonl").write_text("\n".join(lines) + "\n")
    stored = json.loads((rd.path / "manifest.json").read_text())
    (rd.path / "manifest.json").write_text(json.dumps({**stored, "status": "failed"}))
    rd = RunDir.open(rd.path)
    plan, text, source = resumable(rd)
    events2: list[str] = []
    fio = FakeFio(events2)
    Study(plan, text, source, results_root=rd.path.parent, fio=fio, testbed=FakeTestbed(plan, fio, events2)).resume(rd)
    assert _order(events2) == [doc["cell_id"]]
    rd = RunDir.open(rd.path)
    assert len(rd.all_records()) == 13 and len(rd.records()) == 12
    assert next(r for r in rd.records() if r.cell_id == doc["cell_id"]).status == "ok"


def test_a_signal_stops_fio_then_agents_then_tears_down_then_marks_the_manifest(setup, monkeypatch):
    events: list[str] = []
    study = setup(events, interrupt_at=3)
    rd_path = {}
    orig = Events.session_ended

    def spy(self, session, how, *a, **k):
        if how == "interrupted":
            events.append("manifest interrupted")
            rd_path["p"] = self.path.parent
        return orig(self, session, how, *a, **k)

    monkeypatch.setattr(Events, "session_ended", spy)
    with pytest.raises(KeyboardInterrupt):
        study.run()
    tail = events[events.index("fio stopped"):]
    assert tail == ["fio stopped", "agents stopped", "down", "manifest interrupted"]
    m = RunDir.open(rd_path["p"]).manifest()
    assert m.status == "interrupted" and m.sessions[0].how == "interrupted" and m.phase == "teardown"


def test_a_signal_during_teardown_waits_for_it():
    stop = Stopper()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with stop.protect():
            stop._handler(15, None)  # SIGTERM arrives during the teardown: held
            done.append("teardown finished")
    assert done == ["teardown finished"] and stop.exit_code == 143 and stop.name == "SIGTERM"
    stop._handler(2, None)  # a later signal is ignored
    assert stop.exit_code == 143


def test_a_signal_swallowed_by_an_at_fork_callback_is_raised_again_by_check(capfd, monkeypatch):
    import os
    import signal
    import sys

    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's own, as protolab runs (not pytest's)
    stop = Stopper()
    stop.check()  # nothing caught: nothing raised
    armed = [True]  # at-fork callbacks cannot be unregistered: this one acts once
    with stop.installed():
        os.register_at_fork(after_in_parent=lambda: armed and armed.pop() and os.kill(os.getpid(), signal.SIGTERM))
        pid = os.fork()  # the handler's KeyboardInterrupt is raised inside the at-fork callback: Python ignores it
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        assert not armed
        assert stop.signum == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            stop.check()
    # Python's "Exception ignored in ..." traceback is not printed for the handler's own interrupt (CI, 2026-11-26:
    # a SIGTERM in logging's at-fork lock release printed one before protolab's last line)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_other_unraisable_exceptions_are_still_printed_while_the_handlers_are_installed():
    import sys

    seen = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        stop = Stopper()
        with stop.installed():
            class Bad:
                def __del__(self):
                    raise ValueError("from a finaliser")

            Bad()
            with pytest.raises(KeyboardInterrupt):
                stop._handler(15, None)
            Bad()  # after a signal too
        assert [type(u.exc_value) for u in seen] == [ValueError, ValueError]
        assert sys.unraisablehook == seen.append  # restored after the block
    finally:
        sys.unraisablehook = before


def test_resume_refuses_when_fio_differs_unless_forced(setup):
    events: list[str] = []
    with pytest.raises(ProtolabError):
        setup(events, fail={"tr3808-4k__b__h1s1q1__r1"}).run()
    [run] = list((Path(setup(events).results_root)).iterdir())
    rd = RunDir.open(run)
    plan, text, source = resumable(rd)
    fio = FakeFio([], version="fio-3.39")
    study = Study(plan, text, source, results_root=run.parent, fio=fio, testbed=FakeTestbed(plan, fio, []))
    with pytest.raises(ProtolabError) as e:
        study.resume(rd)
    assert str(e.value) == (f"resume {run}: fio version (fio-3.33 then, fio-3.39 now) differ from the run's first "
                            "session; numbers would not be comparable — use --force to resume anyway")
    assert len(RunDir.open(run).all_records()) == 1  # refused: nothing measured
    study.resume(rd, force=True)
    assert len(RunDir.open(run).records()) == 12


def test_a_complete_or_old_run_is_not_resumable(setup):
    rd = setup([]).run()
    with pytest.raises(ProtolabError, match="the run is complete"):
        resumable(rd)
    v1 = RunDir.open(DATA / "v1-run")
    with pytest.raises(ProtolabError, match=r"schema 1\); it can be reported and compared, not resumed"):
        resumable(v1)


def test_resume_is_refused_while_a_session_of_the_run_is_still_going(setup):
    """A second session (resume, detach) of a run still going changes nothing: not its manifest, not its testbed."""
    events: list[str] = []
    with pytest.raises(ProtolabError):
        setup(events, fail={"tr3808-4k__b__h1s1q1__r1"}).run()
    [run] = list((Path(setup(events).results_root)).iterdir())
    going = RunDir.open(run)
    going.hold()  # the session still going
    before = (run / "manifest.json").read_bytes()
    rd = RunDir.open(run)
    plan, text, source = resumable(rd)
    events2: list[str] = []
    fio = FakeFio(events2)
    with pytest.raises(ProtolabError, match=f"^{run}: another protolab session of this run is still going"):
        Study(plan, text, source, results_root=run.parent, fio=fio, testbed=FakeTestbed(plan, fio, events2)).resume(rd)
    assert events2 == [] and (run / "manifest.json").read_bytes() == before
    going.release()
    Study(plan, text, source, results_root=run.parent, fio=fio, testbed=FakeTestbed(plan, fio, events2)).resume(rd)
    assert len(RunDir.open(run).records()) == 12
