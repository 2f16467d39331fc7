"""A session's mark (run.sessionmark): a killed session is told from a live one by pid and start time, and exactly what
its mark names is removed — its fio servers, its socket directory, its lab when the lab's holder is that session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes import FakeFio, FakeTestbed, _order
from protolab.errors import ProtolabError
from protolab.lab.procs import alive, start_time
from protolab.lab.record import Record
from protolab.plan.topology import LabSpec
from protolab.proc import SubprocessRunner
from protolab.results.rundir import RunDir
from protolab.run import Study, sessionmark
from protolab.run.resume import resumable
from protolab.run.sessionmark import Mark, SessionMark

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="marks and lab records are root's files")


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.fixture
def marks(tmp_path, monkeypatch):
    monkeypatch.setattr(sessionmark, "AGENTS_BASE", tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    return SessionMark(run, root=tmp_path / "marks"), tmp_path


def _write(m: SessionMark, mark: Mark) -> None:
    m.path.parent.mkdir(exist_ok=True)
    m.path.write_text(json.dumps(mark.__dict__))
    m.path.chmod(0o600)


def test_a_session_still_running_is_refused_and_nothing_is_removed(marks):
    m, tmp = marks
    agents = tmp / "agents-live"
    agents.mkdir()
    p = _sleeper(str(agents / "h.sock"))
    try:
        _write(m, Mark(p.pid, start_time(p.pid), 1, agents=str(agents)))
        with pytest.raises(ProtolabError, match=rf"^session 1 of this run \(pid {p.pid}\) is still running"):
            m.clean_dead(SubprocessRunner(), lambda s: None)
        assert alive(p.pid) and agents.is_dir() and m.path.exists()
    finally:
        p.kill()
        p.wait()


def test_a_killed_session_s_fio_servers_and_sockets_go_and_a_reused_pid_is_not_mistaken(marks):
    m, tmp = marks
    agents = tmp / "agents-0123"
    agents.mkdir()
    (agents / "h1.sock").touch()
    server = _sleeper(f"--server=sock:{agents}/h1.sock")  # what the killed session's fio server looks like
    other = _sleeper()  # a live process with the killed session's pid but another start time: not it
    nobody = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
                               "sleep 60 & wait", "sh", f"{agents}/h2.sock"],  # another user's, naming the directory
                              start_new_session=True)
    while Path(f"/proc/{nobody.pid}").stat().st_uid != 65534 or b"sleep" not in Path(
            f"/proc/{nobody.pid}/cmdline").read_bytes():  # setpriv, root's until it execs the shell as nobody
        time.sleep(0.01)
    try:
        _write(m, Mark(other.pid, start_time(other.pid) - 1, 3, agents=str(agents)))
        notes: list[str] = []
        killed, removed = m.clean_dead(SubprocessRunner(), notes.append)
        assert killed is not None and killed.session == 3
        assert server.wait(timeout=10) == -signal.SIGTERM
        assert removed == [f"fio server (pid {server.pid})", f"directory {agents}"]
        assert not agents.exists() and not m.path.exists() and alive(other.pid) and alive(nobody.pid)
        assert notes == [f"cleaning what session 3 (pid {other.pid}, killed) left"]
        assert m.clean_dead(SubprocessRunner(), notes.append) == (None, [])  # once only
    finally:
        os.killpg(nobody.pid, signal.SIGKILL)
        for p in (server, other, nobody):
            p.kill()
            p.wait()


def test_a_mark_naming_what_no_session_makes_is_refused(marks):
    m, tmp = marks
    _write(m, Mark(_dead_pid(), None, 1, agents="/etc"))
    with pytest.raises(ProtolabError, match="agents '/etc' is not what a protolab session makes; nothing was removed"):
        m.clean_dead(SubprocessRunner(), lambda s: None)


def _lab_record(workdir: Path, holder: int) -> None:
    workdir.mkdir(mode=0o700)
    rec = Record.create(workdir, LabSpec(prefix="plmk").model_dump(mode="json"), ["nbd"])
    rec.set_state(holder_pid=holder)


def test_the_killed_session_s_lab_is_torn_down_by_its_record_and_another_s_is_left(marks):
    m, tmp = marks
    dead = _dead_pid()
    ours, theirs = tmp / "lab-ours", tmp / "lab-theirs"
    _lab_record(ours, dead)
    _write(m, Mark(dead, None, 1, lab_workdir=str(ours), lab_prefix="plmk"))
    m.clean_dead(SubprocessRunner(), lambda s: None)
    assert not Record.exists(ours)

    _lab_record(theirs, os.getppid())  # a lab another process holds in the workdir the killed session named
    _write(m, Mark(dead, None, 2, lab_workdir=str(theirs), lab_prefix="plmk"))
    notes: list[str] = []
    assert m.clean_dead(SubprocessRunner(), notes.append)[1] == []
    assert Record.exists(theirs) and notes[-1] == (f"the lab in {theirs} is not the one session 2 made (prefix "
                                                   f"'plmk', holder {os.getppid()}): left alone")


@pytest.mark.parametrize("where", ["window", "record"])
def test_a_session_killed_is_found_and_resume_measures_exactly_the_rest(setup, tmp_path, where):
    """The first session kills itself (SIGKILL, in a forked child) at the 5th pair: once its window has measured and
    before its record ("window"), or once its record is stored and before cells.csv and the manifest count it
    ("record"). The mark stays; resume marks session 1 killed, measures every missing pair once, and leaves no mark."""
    cut = "tr3808-4k__a__h1s1q1__r3"
    run_root = tmp_path / "r"
    pid = os.fork()
    if pid == 0:  # the killed session
        try:
            from protolab.results.files import append_lines

            def on_cell(stage, cell, testbed):
                if where == "window" and stage == "done" and cell.id == cut:
                    os.kill(os.getpid(), signal.SIGKILL)

            def add_record(self, rec, figures=None):
                if rec.cell_id == cut:
                    append_lines(self.path / "records.jsonl", [rec.model_dump_json()])
                    os.kill(os.getpid(), signal.SIGKILL)
                stored(self, rec, figures)

            stored = RunDir.add_record
            RunDir.add_record = add_record
            study = setup([])
            study.on_cell = on_cell
            study.run()
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    run = next(run_root.iterdir())
    rd = RunDir.open(run)
    kept = 5 if where == "record" else 4
    assert len(rd.records()) == kept and rd.manifest().cells_done == 4 and rd.manifest().sessions[0].how == "running"
    mark = SessionMark(run)
    assert mark.path.exists() and mark.read().pid == pid

    plan, text, source = resumable(rd)
    events: list[str] = []
    fio = FakeFio(events)
    Study(plan, text, source, results_root=run_root, fio=fio, testbed=FakeTestbed(plan, fio, events)).resume(rd)
    rd = RunDir.open(run)
    ids, seqs = [r.cell_id for r in rd.all_records()], [r.seq for r in rd.all_records()]
    assert len(ids) == len(set(ids)) == 12 and len(_order(events)) == 12 - kept and len(set(seqs)) == 12
    m = rd.manifest()
    assert [s.how for s in m.sessions] == ["interrupted", "complete"] and m.sessions[0].killed
    assert m.cells_done == 12 and m.last_seq == max(seqs)
    if where == "window":  # its rows are kept, listed for the report, and its seq is not reused
        assert [w.seq for w in m.interrupted_windows] == [5] and 5 not in seqs
    else:  # a window with its record is not an interrupted one
        assert m.interrupted_windows == () and 5 in seqs
    assert not mark.path.exists()
