"""SIGTERM at each phase of a lab run, then `protolab resume`: nothing left behind, every cell once, a report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_study import PREFIX, config, plan_text, workdir  # noqa: F401  (fixture)

from conftest import leftovers
from protolab.results.rundir import RunDir

pytestmark = pytest.mark.lab

PHASES = ["testbed up", "prepare", "warm-up", "measure", "report"]


def _cli(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "protolab.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def _wait_for_phase(results: Path, phase: str, proc: subprocess.Popen, limit: float = 120) -> Path:
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        for m in results.glob("*/manifest.json"):
            try:
                if json.loads(m.read_text()).get("phase") == phase:
                    return m.parent
            except ValueError:
                pass  # being replaced
        time.sleep(0.02)
    raise AssertionError(f"the run never reached phase {phase!r} (exit {proc.poll()})")


@pytest.mark.parametrize("phase", PHASES)
def test_sigterm_at_each_phase_then_resume_completes(workdir, tmp_path, phase):
    text = plan_text(config("nbd", "lab:nbd") + config("nfs", "lab:nfs"),  # 1 s: the signal lands 0.5 s into fio
                     method='warmup = "1s"\nduration = "1s"\nrepeats = 2')
    plan = tmp_path / "p.toml"
    plan.write_text(text)
    results = tmp_path / "r"
    p = _cli("run", str(plan), "--results", str(results), "--lab-workdir", str(workdir))
    try:
        run = _wait_for_phase(results, phase, p)
        if phase in ("warm-up", "measure"):
            time.sleep(0.5)  # inside the fio run, not between
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143, err
    assert "Traceback" not in err
    m = json.loads((run / "manifest.json").read_text())
    if phase == "report" and m["status"] == "complete":
        # the report of two cells takes well under a second: the signal may land after the session's last word,
        # and then the last line must say so, not send the user to resume a complete run (seen once in 2 runs)
        assert err.strip().splitlines()[-1] == (f"protolab: interrupted by SIGTERM; the run had completed: its "
                                                f"report is in {run}")
        assert (run / "report.md").is_file() and leftovers(PREFIX) == []
        return
    assert err.strip().splitlines()[-1] == (f"protolab: interrupted by SIGTERM; the testbed was torn down; cells "
                                            f"measured so far stay in {run} — 'protolab resume {run}' measures "
                                            "the rest")
    assert m["status"] == "interrupted" and m["sessions"][0]["how"] == "interrupted"
    assert leftovers(PREFIX) == []  # no namespace, link, mount, loop device or process of the run
    before = len(RunDir.open(run).all_records())

    r = _cli("resume", str(run), "--lab-workdir", str(workdir))
    out, err = r.communicate(timeout=300)
    assert r.returncode == 0, err
    rd = RunDir.open(run)
    recs = rd.all_records()
    ids = [x.cell_id for x in recs]
    assert len(ids) == len(set(ids)) == m["cells_total"] == 4, ids  # every (cell, repeat) exactly once
    assert all(x.status == "ok" and x.result.iops > 0 for x in recs)
    assert {x.session for x in recs} == ({1, 2} if 0 < before < 4 else {1} if before == 4 else {2})
    m = rd.manifest()
    assert m.status == "complete" and [s.how for s in m.sessions] == ["interrupted", "complete"]
    assert (run / "report.html").is_file() and "resume" not in err
    assert leftovers(PREFIX) == []


def test_a_server_that_dies_fails_its_cell_in_one_line_and_resume_measures_it(workdir, tmp_path):
    from protolab.errors import ProtolabError
    from protolab.plan.load import load_plan_text
    from protolab.run import Study
    from protolab.run.resume import resumable

    text = plan_text(config("nbd", "lab:nbd"), method='warmup = 0\nduration = "2s"\nrepeats = 2')
    killed = []

    def on_cell(stage, cell, testbed):
        if stage == "ready" and cell.repeat == 2 and not killed:
            pid = testbed.lab.server_pids()["nbdkit"]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    study = Study(load_plan_text(text), text, "test", results_root=tmp_path / "r", lab_workdir=workdir,
                  on_cell=on_cell)
    with pytest.raises(ProtolabError) as e:
        study.run()
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"storage server nbdkit (pid {killed[0]}) is not running"), msg
    assert "cell tr3808-4k__nbd__h1s1q4__r2" in msg and "'protolab resume " in msg
    assert leftovers(PREFIX) == []
    rd = RunDir.open(study.rundir.path)
    assert [r.repeat for r in rd.records()] == [1] and rd.manifest().status == "failed"
    plan, text2, source = resumable(rd)
    Study(plan, text2, source, results_root=rd.path.parent, lab_workdir=workdir).resume(rd)
    rd = RunDir.open(rd.path)
    assert [(r.repeat, r.session) for r in rd.all_records()] == [(1, 1), (2, 2)]
    assert all(r.result.iops > 0 and r.status == "ok" for r in rd.records())
    assert leftovers(PREFIX) == []
