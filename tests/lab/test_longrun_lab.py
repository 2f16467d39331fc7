"""The aging stage on the real lab: random writes on a copy-on-write export (lab.cow) for 30 s in steps of 10 s,
no restore between them; cells.csv has a row per step, series.csv one continuous time axis, the report the slope."""

from __future__ import annotations

import csv

import pytest

from conftest import family_prefix, lab_workdir, leftovers
from protolab.plan.load import load_plan_text
from protolab.results.rundir import RunDir
from protolab.run import Study

pytestmark = pytest.mark.lab
# its own prefix (PROTOLAB_TEST_LAB_PREFIX + "a" when set, so parallel sessions never share one)
PREFIX = family_prefix("a")

PLAN = f"""
name = "aging"
baseline = "nbd"
workloads = [{{ name = "randwrite", block_size = "4k", read_pct = 0, random_pct = 100, oio = 4 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "1G"
export_size = "128M"
cow = true
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
streams = 1
[method]
warmup = "2s"
repeats = 1
data_size = "64M"
interval = "1s"
slo = {{ p95 = "50ms" }}
[stage.age]
duration = "30s"
every = "10s"
"""


@pytest.fixture
def workdir(request):
    yield from lab_workdir(PREFIX, f"aging-{request.node.name[:30]}")


def test_aging_on_a_cow_export_is_one_time_axis_with_a_slope(workdir, tmp_path):
    from protolab.report.report_cli import write_report

    study = Study(load_plan_text(PLAN), PLAN, "test", results_root=tmp_path / "results", lab_workdir=workdir)
    rd = study.run()
    assert leftovers(PREFIX) == []
    rd = RunDir.open(rd.path)
    recs = rd.records()
    assert [(r.coords["stage"], r.coords["age_s"]) for r in recs] == [("age", 0), ("age", 10), ("age", 20)]
    assert all(r.status == "ok" and r.result.iops > 0 and 9.5 <= r.result.runtime_s <= 10.5 for r in recs)
    # only the first step warms up: the data is under load without a break but fio's restarts
    assert recs[0].warmup.seconds >= 1.5 and [r.warmup.seconds for r in recs[1:]] == [0.0, 0.0]
    rows = list(csv.DictReader((rd.path / "cells.csv").open()))
    assert [(x["stage"], x["age_s"]) for x in rows] == [("age", "0"), ("age", "10"), ("age", "20")]
    series = rd.intervals()
    axis = [row.t_s for seq in sorted(series) for row in series[seq]]
    # one time axis over the three steps, each going on where the last ended (each window ends at the status
    # nearest its 10 s of I/O time, and a busy machine may merge two statuses: a point more or less per step)
    assert all(b > a for a, b in zip(axis, axis[1:])) and 27 <= len(axis) <= 33 and 28 <= axis[-1] <= 33
    for a, b in zip(sorted(series), sorted(series)[1:]):
        # the next step's first interval ends a status after the previous step's last (its jobs' I/O time)
        assert series[a][-1].t_s < series[b][0].t_s <= series[a][-1].t_s + 1.1
    assert all(row.lat_p95_us is not None and row.lat_p95_us > 0 for seq in series for row in series[seq])
    # each step's series is that step's window: the mean of its intervals is its IOPS
    for r in recs:
        vals = [row.iops for row in series[r.seq]]
        assert abs(sum(vals) / len(vals) - r.result.iops) / r.result.iops < 0.03

    path = write_report(rd)
    html = path.read_text()
    said = [f.text for f in rd.report_data.findings if f.kind == "long run"]
    assert len(said) == 1 and said[0].startswith(f"randwrite, aging of nbd at 1×1×4=4 (repeat 1, {len(axis)} intervals "
                                                 f"over {axis[-1]:.0f} s)")
    assert " %/h" in said[0] and ", 95 % interval by batch means of 10 blocks; " in said[0]
    assert "p95 over 50 ms in " in said[0] and said[0] in html
    assert "the tables pool the steps of each aging sequence as windows of its cell" in html
    assert (rd.path / "figures" / "longrun-iops-randwrite-1-1-4-4.png").stat().st_size > 1000


TWO_HOSTS = f"""
name = "twohosts"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "{PREFIX}"
pool_size = "1G"
export_size = "128M"
hosts = 2
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
hosts = 2
streams = 1
oio = 4
[method]
warmup = "2s"
duration = "6s"
interval = "2s"
repeats = 1
data_size = "64M"
"""


def test_a_client_run_writes_its_merged_intervals_when_the_client_prints(workdir, tmp_path):
    """Two lab hosts, one fio client: statuses every 2 s from both servers, merged into each interval's row."""
    study = Study(load_plan_text(TWO_HOSTS), TWO_HOSTS, "test", results_root=tmp_path / "results",
                  lab_workdir=workdir)
    rd = RunDir.open(study.run().path)
    assert leftovers(PREFIX) == []
    [rec] = rd.records()
    assert rec.status == "ok" and sorted(rec.result.per_host_iops) == ["h1", "h2"]
    rows = rd.intervals()[rec.seq]
    assert [r.t_s for r in rows] == pytest.approx([2.0, 4.0, 6.0], abs=0.1)  # 6 s in intervals of 2 s
    assert all(r.lat_p95_us > 0 and r.lat_p99_us >= r.lat_p95_us and r.mbps > 0 for r in rows)
    # each interval sums both servers: the mean of the merged IOPS is the window's, and the hosts' rows add up to it
    assert abs(sum(r.iops for r in rows) / 3 / rec.result.iops - 1) < 0.03
    per_host = rd.series()[rec.seq]
    assert sorted(per_host) == ["all", "h1", "h2"]
    assert [a + b for a, b in zip(per_host["h1"], per_host["h2"])] == pytest.approx([r.iops for r in rows], rel=1e-3)
