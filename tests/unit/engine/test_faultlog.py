"""The fine timeline (engine.faultlog) read from real fio 3.33 logs: tests/data/fio-faultlog/ was written by fio on a
file with the job file t.fio there (one job, psync, 4k random reads; 3000 I/Os, then a think time of 300 ms), so its
IOPS log has gaps of about 300 ms with no completion."""

from __future__ import annotations

from fakes import DATA
from protolab.engine.faultlog import (
    io_errors,
    log_options,
    merge,
    parse_log,
    read_logs,
    remove_logs,
)
from protolab.engine.status import documents

LOGS = DATA / "fio-faultlog"


def _longest_zero_run(values) -> tuple[int, int]:
    best, start, run = 0, 0, 0
    for i, v in enumerate(values):
        run = run + 1 if v == 0 else 0
        if run > best:
            best, start = run, i - run + 1
    return best, start


def test_fios_log_lines_are_time_value_direction():
    rows = parse_log((LOGS / "ft_iops.1.log").read_text())
    assert rows[0] == (149, 12771.0, 0) and len(rows) == 88
    assert parse_log("10, 5, 0, 0, 0\n20, 7") == [(10, 5.0, 0)]  # a line fio did not finish is skipped


def test_the_real_logs_merge_into_10ms_bins_whose_longest_empty_run_is_the_think_time():
    jobs = read_logs(LOGS / "ft")
    assert len(jobs) == 1 and len(jobs[0][1]) == 103
    tl = merge(jobs, t0_ms=0.0, window_ms=2000.0)
    assert len(tl.iops) == 200 and tl.step_ms == 10
    # the log's entries go 233 → 528 ms, 771 → 1071, 1310 → 1610 and stop at 1891: pauses of ~300 ms
    length, start = _longest_zero_run(tl.iops)
    assert length == 29 and start == 131  # bins (1310, 1320] … (1590, 1600]: 290 ms without a completion
    starts = [i + 1 for i, (a, b) in enumerate(zip(tl.iops, tl.iops[1:])) if a > 0 and b == 0]
    assert starts == [24, 78, 131, 190]  # the pauses after every 3000 I/Os; the last one runs to the log's end
    assert tl.iops[13] > 0 and all(v == 0 for v in tl.iops[:13])  # the first entry, 149 ms: fio's start
    busy = [v for v in tl.iops[:23] if v]
    assert 10_000 < sum(busy) / len(busy) < 40_000  # psync on a tmp file: tens of thousands of IOPS
    lat = [v for v in tl.lat_us[:23] if v is not None]
    assert lat and all(1 < v < 1000 for v in lat)  # µs
    assert tl.lat_us[30] is None  # inside a pause: no completion, no latency


def test_a_window_that_starts_later_in_the_jobs_time_shifts_the_bins():
    jobs = read_logs(LOGS / "ft")
    tl = merge(jobs, t0_ms=500.0, window_ms=1000.0)
    assert len(tl.iops) == 100
    assert tl.iops[0] == 0 and tl.iops[2] > 0  # 500..528 ms is the end of the first pause


def test_io_errors_come_from_the_last_status():
    docs = documents((LOGS / "status.json").read_text())
    assert len(docs) == 3 and io_errors(docs) == (0, None)
    last = {**docs[-1], "jobs": [{**docs[-1]["jobs"][0], "total_err": 7, "first_error": 5}]}
    assert io_errors([*docs, last]) == (7, "error 5 (Input/output error)")


def test_the_error_that_made_fio_give_up_is_counted():
    """fio 3.33's last document after tgt's and nbdkit's restart (tests/lab/test_faults_lab.py, 2026-12-07): the job
    ended on its first failed I/O, so total_err is 0 and the error is the job's ``error``."""
    for name, words in (("libiscsi-gave-up", "error 1 (Operation not permitted)"),
                        ("libnbd-gave-up", "error -1 (the engine failed without an errno; or EPERM)")):
        docs = documents((LOGS / f"{name}.json").read_text())
        assert io_errors(docs) == (0, None)  # read as if fio had gone on: what it counted
        assert io_errors(docs, ended=True) == (1, words)


def test_a_faulted_cells_job_file_asks_fio_for_the_10ms_logs_and_goes_on_after_errors():
    opts = log_options("/run/x/raw/c.fault")
    assert opts == {"write_iops_log": "/run/x/raw/c.fault", "write_lat_log": "/run/x/raw/c.fault",
                    "log_avg_msec": "10", "continue_on_error": "all"}
    assert "log_avg_msec" in (LOGS / "t.fio").read_text()


def test_fios_unsigned_negative_error_codes_are_said_not_a_traceback():
    from protolab.engine.parse import error_words, parse_fio_json

    assert error_words(5) == "error 5 (Input/output error)"
    assert error_words(4294967295) == "error -1 (the engine failed without an errno; or EPERM)"  # libnbd's engine, DEAD connection
    assert error_words(2**64 - 22) == "error -22 (Invalid argument)"
    assert error_words(10**30).startswith("error ")
    docs = documents((LOGS / "status.json").read_text())
    doc = {**docs[-1], "jobs": [{**docs[-1]["jobs"][0], "error": 4294967295}]}
    assert parse_fio_json(doc).error_messages == ["a: error -1 (the engine failed without an errno; or EPERM)"]


def test_a_client_runs_logs_are_read_as_each_servers_jobs(tmp_path):
    """A client run's logs come back as PREFIX_iops.N.log.<server> (each server numbers its jobs from 1): two servers'
    copies of the real log read as two jobs, clat beside each (read_logs once looked only for PREFIX_iops.N.log,
    so a multi-host faulted cell had an empty timeline)."""
    import shutil

    for server in ("h1.sock", "h2.sock"):
        for kind in ("iops", "clat"):
            shutil.copy(LOGS / f"ft_{kind}.1.log", tmp_path / f"c.fault_{kind}.1.log.{server}")
    jobs = read_logs(tmp_path / "c.fault")
    one = read_logs(LOGS / "ft")[0]
    assert jobs == [one, one]
    assert merge(jobs, t0_ms=0.0, window_ms=2000.0).iops == [2 * v for v in merge([one], 0.0, 2000.0).iops]


CLIENT = LOGS / "client"  # a fio client's run of client/t.fio on a fio server (fio 3.33, FIO_CLIENT_STREAM=1,
# --status-interval=1): job "ok" writes a file, job "full" writes /dev/full from 1.5 s (ENOSPC, error 28)


def test_a_fio_servers_logs_are_read_as_its_client_named_them(tmp_path):
    jobs = read_logs(CLIENT / "fc")  # fc_iops.1.log.127.0.0.1: the client adds the server's host name
    assert [len(i) for i, _ in jobs] == [255, 0] and len(jobs[0][1]) == 271
    tl = merge(jobs, t0_ms=0.0, window_ms=3000.0)
    assert tl.jobs == 2 and sum(1 for v in tl.iops if v > 0) > 250
    for p in CLIENT.glob("fc_*"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    remove_logs(tmp_path / "fc")
    assert list(tmp_path.iterdir()) == []


def test_a_client_runs_errors_come_from_its_servers_last_status_not_the_final_all_clients_one():
    docs = documents((CLIENT / "status.json").read_text())
    assert list(docs[-1]["client_stats"][0].values())[0] == "All clients"  # the streamed client's last document
    assert io_errors(docs) == (1, "error 28 (No space left on device)")
