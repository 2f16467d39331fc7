"""protolab's fio patch 0002: a fio client run writes the IO logs its servers name only inside the directory it is
given (FIO_CLIENT_FILES_UNDER), so a hostile fio server cannot make the root client write elsewhere."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from protolab.engine.histlog import read_hist_logs

JOB = """[global]
ioengine=null
size=4m
bs=4k
rw=read
time_based=1
runtime=2
log_avg_msec=1000
write_iops_log={log}
[j]
"""


def _client_run(fio_path, tmp_path, log, allowed, job_text=JOB):
    sock = tmp_path / "srv.sock"
    server = subprocess.Popen([fio_path, f"--server=sock:{sock}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        job = tmp_path / "j.fio"
        job.write_text(job_text.format(log=log))
        env = {**os.environ, "FIO_CLIENT_FILES_UNDER": str(allowed)}
        return subprocess.run([fio_path, f"--client=sock:{sock.name}", str(job)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    finally:
        os.killpg(server.pid, 9)
        server.wait(timeout=10)


def test_a_log_the_server_names_outside_the_directory_is_refused(fio_path, tmp_path):
    allowed, outside = tmp_path / "run", tmp_path / "elsewhere"
    allowed.mkdir()
    outside.mkdir()
    p = _client_run(fio_path, tmp_path, outside / "victim", allowed)
    assert "outside FIO_CLIENT_FILES_UNDER; refused" in p.stdout + p.stderr
    assert list(outside.iterdir()) == []
    p = _client_run(fio_path, tmp_path, allowed / "../elsewhere/victim", allowed)
    assert "refused" in p.stdout + p.stderr and list(outside.iterdir()) == []


def test_a_log_inside_the_directory_is_written(fio_path, tmp_path):
    allowed = tmp_path / "run"
    allowed.mkdir()
    p = _client_run(fio_path, tmp_path, allowed / "cell", allowed)
    assert "refused" not in p.stdout + p.stderr, p.stdout + p.stderr
    logs = [f.name for f in allowed.iterdir()]
    assert len(logs) == 1 and logs[0].startswith("cell_iops") and logs[0].endswith(".srv.sock"), logs
    if not (allowed / logs[0]).read_text().strip():
        pytest.fail("the IO log is empty")


HIST_JOB = """[global]
ioengine=null
size=4m
bs=4k
rw=randread
time_based=1
runtime=2
rate_iops=2000
log_hist_msec=100
log_hist_coarseness=2
write_hist_log={log}
[j]
"""


def test_a_histogram_log_comes_back_with_each_steps_counts(fio_path, tmp_path):
    """Patch 0005: a server's histogram log reaches the client with each 100 ms step's own counts (fio 3.33 sent
    counts that grew through the run: 200, 200, 400, 400, 600, …)."""
    allowed = tmp_path / "run"
    allowed.mkdir()
    p = _client_run(fio_path, tmp_path, allowed / "cell", allowed, HIST_JOB)
    assert "refused" not in p.stdout + p.stderr, p.stdout + p.stderr
    [entries] = read_hist_logs(allowed / "cell")
    steps = [sum(c) for _, _, c in entries]
    # 2,000 IOPS for 2 s: 200 a step and 4,000 in all; the unpatched server's growing counts sum to ~22,000 (200, 200,
    # 400, 400, … 2,000, 2,000). A busy machine delays steps (rate_iops catches up in the next): the total and the
    # steps' trend are what tell the two apart, not each step's count.
    third = len(steps) // 3
    assert len(steps) >= 15 and 2000 <= sum(steps) <= 4400, steps
    assert sum(steps[-third:]) < 1.5 * sum(steps[:third]), steps
