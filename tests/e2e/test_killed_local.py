"""`kill -9` of protolab on this machine's testbed (two hosts: two fio servers in the run's own role cgroups), then
`protolab resume`: the killed session's fio servers, socket directory and cgroups are removed from its mark, and the
missing windows measured once each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protolab.proc import SubprocessRunner
from protolab.results.rundir import RunDir
from protolab.run.sessionmark import MARKS, SessionMark, processes_naming
from protolab.trust import PRIVATE_BASE

MARKS_ROOT = PRIVATE_BASE / MARKS

PLAN = """
name = "killedlocal"
baseline = "a"
workloads = ["tr3808-4k"]
[[configurations]]
name = "a"
target = "{data}"
ioengine = "libaio"
[[configurations]]
name = "b"
target = "{data}"
ioengine = "psync"
[[load_points]]
hosts = 2
streams = 1
oio = 2
[method]
warmup = "1s"
duration = "2s"
repeats = 2
data_size = "64M"
"""


def _cli(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "protolab.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"},
                            start_new_session=True)


def test_sigkill_then_resume_removes_the_fio_servers_and_cgroups_it_left(tmp_path, fio_path):
    if os.geteuid() != 0:
        pytest.skip("role cgroups and /run/protolab are root's")
    (tmp_path / "d").mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(data=tmp_path / "d"))
    p = _cli("run", plan, "--results", tmp_path / "r")
    try:
        end, done = time.monotonic() + 120, None
        while time.monotonic() < end and p.poll() is None and done is None:
            for m in (tmp_path / "r").glob("*/manifest.json"):
                try:
                    doc = json.loads(m.read_text())
                except ValueError:
                    continue
                if doc.get("cells_done", 0) >= 1 and doc.get("phase") == "warm-up":
                    done = (m.parent, doc["cells_done"])
            time.sleep(0.02)
        assert done and p.poll() is None, f"the run never reached a second window (exit {p.poll()})"
        time.sleep(2.0)  # inside the second window
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    run, measured = done
    mark = SessionMark(run, root=MARKS_ROOT).read()
    try:
        assert mark is not None and mark.pid == p.pid and mark.lab_workdir is None
        servers = processes_naming(mark.agents)  # the two fio servers, alive after protolab died
        assert len(servers) >= 2 and Path(mark.cgroup, "loadgen").is_dir()
        assert len(RunDir.open(run).all_records()) == measured

        r = _cli("resume", run)
        out, err = r.communicate(timeout=300)
        assert r.returncode == 0, err
        assert f"cleaning what session 1 (pid {p.pid}, killed) left" in out
        ids = [x.cell_id for x in RunDir.open(run).all_records()]
        assert len(ids) == len(set(ids)) == 4, ids
        assert processes_naming(mark.agents) == [] and not Path(mark.agents).exists()
        assert not Path(mark.cgroup).exists()  # the resumed session's own group is gone too: same name, removed
        assert SessionMark(run, root=MARKS_ROOT).read() is None
    finally:
        SessionMark(run, root=MARKS_ROOT).clean_dead(SubprocessRunner(), print)  # a failed check leaves nothing behind
