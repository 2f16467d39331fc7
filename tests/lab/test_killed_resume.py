"""`kill -9` of a running protolab, mid-window, then `protolab resume`: what the killed session left (its lab, fio
servers, socket directory, cgroups) is removed from its mark and the lab's record, and exactly the missing windows
are measured — every (cell, repeat) once, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import family_prefix, lab_workdir, leftovers, settled_leftovers
from protolab.lab.holder import path_of
from protolab.proc import SubprocessRunner
from protolab.results.rundir import RunDir
from protolab.run.sessionmark import MARKS, SessionMark
from protolab.trust import PRIVATE_BASE

pytestmark = pytest.mark.lab
PREFIX = family_prefix("x")
MARKS_ROOT = PRIVATE_BASE / MARKS  # the CLI's, not the tests' own (conftest points in-process sessions elsewhere)

PLAN = f"""
name = "killed"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "{PREFIX}"
hosts = 2
pool_size = "1G"
export_size = "128M"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
hosts = 2
streams = 1
oio = 4
[method]
warmup = "1s"
duration = "2s"
repeats = 2
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "killed")


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "protolab.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"},
                            start_new_session=True)


def _manifest(results: Path) -> tuple[Path, dict] | None:
    for m in results.glob("*/manifest.json"):
        try:
            return m.parent, json.loads(m.read_text())
        except ValueError:
            pass  # being replaced
    return None


def test_sigkill_mid_window_then_resume_cleans_and_measures_exactly_the_rest(workdir, tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    results = tmp_path / "r"
    p = _cli("run", plan, "--results", results, "--lab-workdir", workdir)
    try:
        end = time.monotonic() + 60
        found = None
        while time.monotonic() < end and p.poll() is None:  # the second window's warm-up, or a later one's
            found = _manifest(results)
            if found and found[1].get("cells_done", 0) >= 1 and found[1].get("phase") == "warm-up":
                break
            time.sleep(0.02)
        assert found and p.poll() is None, f"the run never reached a second window (exit {p.poll()})"
        time.sleep(2.0)  # 1 s of warm-up, then 1 s into the 2 s measured window
        os.kill(p.pid, signal.SIGKILL)  # protolab alone, as the OOM killer does: its fio and servers go on
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    run = found[0]
    try:
        _resume_and_check(run, workdir, p.pid, found[1]["cells_done"])
    finally:
        SessionMark(run, root=MARKS_ROOT).clean_dead(SubprocessRunner(), print)  # a failed check leaves nothing


def _resume_and_check(run: Path, workdir: Path, pid: int, done: int) -> None:
    rd = RunDir.open(run)
    before = [r.cell_id for r in rd.all_records()]
    m = rd.manifest()
    cut = m.measuring.seq if m.measuring is not None and m.measuring.seq > m.last_seq else None
    mark = SessionMark(run, root=MARKS_ROOT).read()
    assert mark is not None and mark.pid == pid and mark.lab_workdir == str(workdir)
    assert mark.agents and Path(mark.agents).is_dir()  # two hosts: fio servers on their sockets
    assert leftovers(PREFIX) and path_of(PREFIX).exists()  # what the killed run left: namespaces, servers, …
    assert len(before) == done < 4 and m.sessions[0].how == "running"  # the window after them was cut

    r = _cli("resume", run, "--lab-workdir", workdir)
    out, err = r.communicate(timeout=300)
    assert r.returncode == 0, err
    assert f"cleaning what session 1 (pid {pid}, killed) left" in out + err
    rd = RunDir.open(run)
    ids = [x.cell_id for x in rd.all_records()]
    assert len(ids) == len(set(ids)) == rd.manifest().cells_total == 4, ids  # every (cell, repeat) exactly once
    assert ids[:len(before)] == before and all(x.status == "ok" and x.result.iops > 0 for x in rd.all_records())
    m = rd.manifest()
    assert [s.how for s in m.sessions] == ["interrupted", "complete"] and m.sessions[0].killed
    assert [w.seq for w in m.interrupted_windows] == ([cut] if cut else [])  # rows it wrote: kept, under its seq
    assert cut is None or cut not in {x.seq for x in rd.all_records()}  # and the window measured anew
    assert (run / "report.html").is_file()
    assert settled_leftovers(PREFIX) == [] and not path_of(PREFIX).exists()
    assert not Path(mark.agents).exists() and SessionMark(run, root=MARKS_ROOT).read() is None
    assert not (workdir / "lab.json").exists()
