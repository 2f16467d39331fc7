"""Teardown finishes whatever one of its steps does: a fio stuck past SIGKILL (in uninterruptible I/O, which a test
cannot make here: its wait() is faked to time out forever) still leaves the lab's teardown run and the manifest
ended."""

from __future__ import annotations

import subprocess

import pytest

from fakes import FakeTestbed
from protolab.engine import agents
from protolab.errors import ProtolabError
from protolab.results.rundir import RunDir
from protolab.run.labbed import LabTestbed
from protolab.run.testbed import every_step


class StuckProcess:
    """A Popen whose process never goes, even after SIGKILL."""

    pid = 2**22 + 7  # no such process: the group signals find nothing

    def wait(self, timeout=None):
        raise subprocess.TimeoutExpired("fio", timeout)

    def poll(self):
        return None


def test_ending_an_agent_stuck_past_sigkill_returns():
    agents._end(StuckProcess(), 0.01)  # would raise TimeoutExpired before


def test_every_step_runs_and_the_failures_are_named_together():
    ran = []

    def stuck():
        ran.append("agents")
        raise subprocess.TimeoutExpired("fio", 5)

    def busy():
        ran.append("cgroups")
        raise ProtolabError("cgroup busy")

    with pytest.raises(ProtolabError, match=r"teardown: TimeoutExpired: .*fio.*; cgroup busy; run 'protolab lab"):
        every_step([stuck, busy, lambda: ran.append("lab")])
    assert ran == ["agents", "cgroups", "lab"]


def test_the_lab_is_torn_down_when_stopping_an_agent_hangs(tmp_path):
    class Lab:
        downs = 0

        def down(self, keep_logs_in=None):
            Lab.downs += 1

    class Stuck:
        def stop(self):
            raise subprocess.TimeoutExpired("fio", 5)

    from protolab.run.progress import Silent

    bed = LabTestbed.__new__(LabTestbed)
    bed.progress, bed.cgroups, bed.sockets, bed.lab = Silent(), None, None, Lab()
    bed.agents = {"h1": Stuck(), "h2": Stuck()}
    with pytest.raises(ProtolabError, match="teardown: TimeoutExpired"):
        bed.down()
    assert Lab.downs == 1 and bed.lab is None and bed.agents == {}


def test_a_session_whose_teardown_hangs_still_ends_its_manifest(setup, monkeypatch):
    events: list[str] = []
    study = setup(events)

    def stuck_down(self, keep_logs_in=None):
        events.append("down")
        raise ProtolabError("teardown: TimeoutExpired: Command 'fio' timed out after 5 seconds")

    monkeypatch.setattr(FakeTestbed, "down", stuck_down)
    with pytest.raises(ProtolabError, match="teardown: TimeoutExpired"):
        study.run()
    m = RunDir.open(study.rundir.path).manifest()
    assert events[-1] == "down"
    assert m.status == "failed" and m.ended and m.sessions[-1].how == "failed"


def test_a_session_stopped_by_an_unexpected_error_is_torn_down_and_marked_failed(setup, monkeypatch):
    events: list[str] = []
    study = setup(events)
    monkeypatch.setattr(study.fio, "run_job", lambda *a, **k: (_ for _ in ()).throw(subprocess.TimeoutExpired("fio", 5)),
                        raising=False)
    with pytest.raises(Exception):
        study.run()
    m = RunDir.open(study.rundir.path).manifest()
    assert "down" in events and m.status == "failed" and m.ended


def test_the_default_lab_work_directory_is_outside_the_private_run_ganesha_gets():
    """NFS-Ganesha and rpcbind run with an empty private /run (lab.servers.ganesha.private_run): a work directory under /run
    hid ganesha.conf and its log from it (make demo failed at once on 2026-11-25)."""
    from protolab.lab import default_workdir
    from protolab.lab.servers.ganesha import private_run

    assert "/run" in " ".join(private_run(["ganesha.nfsd"]))
    assert not str(default_workdir("pl")).startswith("/run/")
