"""protolab's fio patch 0004 against the real fio: with FIO_CLIENT_STREAM the client prints each server's status as
it comes, a document of its own, so ``Fio.run_clients(on_status=…)`` reads them live and stops the run at the
status it needs; the servers then end their jobs and send their last status. Without the variable the client
prints every status at the end, in one document, as fio 3.33 does."""

from __future__ import annotations

import os
import subprocess
import time

from protolab.engine.fio import Fio
from protolab.engine.status import documents, snapshots

JOB = """[global]
ioengine=null
size=4m
bs=4k
rw=randread
time_based=1
runtime=30
[a]
[b]
"""


def _servers(fio_path, tmp_path, n=2):
    procs, socks = [], []
    for i in range(n):
        sock = tmp_path / f"s{i}.sock"
        procs.append(subprocess.Popen([fio_path, f"--server=sock:{sock}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        socks.append(sock)
    for sock in socks:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
    return procs, socks


def _stop(procs):
    for p in procs:
        os.killpg(p.pid, 9)
        p.wait(timeout=10)


def test_a_streamed_client_run_is_read_live_and_stopped_at_the_status_asked(fio_path, tmp_path):
    procs, socks = _servers(fio_path, tmp_path)
    try:
        job = tmp_path / "j.fio"
        job.write_text(JOB)
        seen = []

        def on_status(doc):  # stop at the fourth document: two statuses of each server
            seen.append(doc)
            return len(seen) >= 4

        text = Fio(fio_path).run_clients([(f"sock:{s.name}", job) for s in socks], tmp_path / "out.json",
                                         cwd=tmp_path, timeout=60, label="stream", status_interval=1,
                                         on_status=on_status)
    finally:
        _stop(procs)
    # each document one server's one status, both its jobs, passed on while the run went (it was stopped there)
    assert len(seen) == 4
    for doc in seen:
        jobs = doc["client_stats"]
        assert sorted(j["jobname"] for j in jobs) == ["a", "b"] and len({j["hostname"] for j in jobs}) == 1
    per = snapshots(documents(text))
    assert len(per) == 2
    for snaps in per.values():
        # the run's 30 s were cut short: the jobs' last status (sent when they were told to end) is seconds in
        assert 2 <= len(snaps) <= 5 and all(len(s.jobs) == 2 for s in snaps)
        assert 1500 < snaps[-1].runtime_ms < 10_000
        assert [s.runtime_ms for s in snaps] == sorted(s.runtime_ms for s in snaps)


def test_without_the_variable_the_client_prints_every_status_at_the_end(fio_path, tmp_path):
    procs, socks = _servers(fio_path, tmp_path)
    try:
        job = tmp_path / "j.fio"
        job.write_text(JOB.replace("runtime=30", "runtime=3"))
        out = tmp_path / "out.json"
        p = subprocess.run([fio_path, "--output-format=json+", f"--output={out}",
                            *(a for s in socks for a in (f"--client=sock:{s.name}", "--status-interval=1", str(job)))],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        _stop(procs)
    assert p.returncode == 0, p.stdout + p.stderr
    docs = documents(out.read_text())
    assert len(docs) == 1
    per = snapshots(docs)
    assert len(per) == 2 and all(len(v) >= 3 for v in per.values())
