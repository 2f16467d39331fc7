"""Per-second IOPS series from fio's per-job logs."""

from __future__ import annotations

from protolab.engine.measure import read_series


def test_seconds_every_job_logged_are_summed_per_host(tmp_path):
    # host a: two jobs, one logged a third second the other dropped; host b: one job, read and write lines
    (tmp_path / "c.measure_iops.1.log.a.sock").write_text("1000, 100, 0, 4096, 0\n2000, 110, 0, 4096, 0\n"
                                                         "3000, 50, 0, 4096, 0\n")
    (tmp_path / "c.measure_iops.2.log.a.sock").write_text("1001, 200, 0, 4096, 0\n2001, 210, 0, 4096, 0\n")
    (tmp_path / "c.measure_iops.1.log.b.sock").write_text("1000, 30, 0, 4096, 0\n1000, 10, 1, 4096, 0\n"
                                                         "2000, 31, 0, 4096, 0\n2000, 11, 1, 4096, 0\n")
    (tmp_path / "other_iops.1.log").write_text("1000, 999, 0, 4096, 0\n")  # another cell's log
    total, hosts = read_series(tmp_path, "c.measure")
    assert hosts == {"a.sock": [300.0, 320.0], "b.sock": [40.0, 42.0]}
    assert total == [340.0, 362.0]


def test_direct_runs_have_no_host_suffix_and_empty_logs_give_no_series(tmp_path):
    (tmp_path / "c.warmup0_iops.1.log").write_text("1000, 5, 0, 4096, 0\n")
    assert read_series(tmp_path, "c.warmup0") == ([5.0], {"local": [5.0]})
    (tmp_path / "c.measure_iops.1.log").write_text("")
    assert read_series(tmp_path, "c.measure") == ([], {})
