"""Application-shaped load as data: the plan's shape fields and the fio options they become."""

from __future__ import annotations

import pytest

from protolab.engine.jobfile import render_streams, shape_options
from protolab.plan.library import BUILTIN_WORKLOADS
from protolab.plan.load import load_plan_text
from protolab.plan.model import Workload

PLAN = """
name = "s"
baseline = "a"
workloads = [{workload}]
load_points = [{{ streams = 1 }}]
[[configurations]]
name = "a"
target = "/tmp/pla-none/t.dat"
"""


def _w(**kw) -> Workload:
    return Workload(name="w", block_size=4096, read_pct=50, random_pct=100, **kw)


def test_bursts_are_ios_then_a_pause():
    # fio: thinktime_blocks I/Os as fast as the OIO allows, then thinktime µs idle
    assert shape_options(_w(bursts={"ios": 400, "pause": "3s"})) == {"thinktime": "3000000",
                                                                     "thinktime_blocks": "400"}
    assert shape_options(_w(bursts={"ios": 15, "pause": "250ms"}, hot_zones=[{"io_pct": 100, "space_pct": 100}])) \
        == {"thinktime": "250000", "thinktime_blocks": "15", "random_distribution": "zoned:100/100"}
    assert shape_options(_w(rate_iops=30, arrivals="poisson")) == {"rate_iops": "15,15", "rate_process": "poisson"}


def test_think_time_and_hot_zones():
    opts = shape_options(_w(think_time="5ms", think_every=8,
                            hot_zones=[{"io_pct": 60, "space_pct": 10}, {"io_pct": 30, "space_pct": 20},
                                       {"io_pct": 10, "space_pct": 70}]))
    assert opts == {"thinktime": "5000", "thinktime_blocks": "8", "random_distribution": "zoned:60/10:30/20:10/70"}
    assert shape_options(_w(rate_iops=7)) == {"rate_iops": "4,3"}  # fio caps reads and writes each
    assert shape_options(_w(rate_iops=1)) == {"rate_iops": "1,1"}  # 0 would mean no cap: at least 1 each way
    from protolab.engine.jobfile import rate_per_direction
    assert rate_per_direction(462, 200 / 3) == "308,154" and rate_per_direction(200, 100) == "200"
    assert shape_options(_w()) == {}


@pytest.mark.parametrize("skew, fio", [({"zipf": 1.2}, "zipf:1.2"), ({"pareto": 0.9}, "pareto:0.9"),
                                       ({"normal": 5.0}, "normal:5")])
def test_skew_is_fios_random_distribution(skew, fio):
    w = _w(skew=skew)
    assert shape_options(w) == {"random_distribution": fio} and w.summary().endswith(f", {fio} offsets")


def test_summaries_say_the_shape():
    w = _w(rate_iops=100, arrivals="poisson")
    assert w.summary() == "4k, 50 % read, 100 % random, 4 OIO, ≤100 IOPS/stream, Poisson arrivals"
    assert _w(bursts={"ios": 400, "pause": "3s"}).summary() == \
        "4k, 50 % read, 100 % random, 4 OIO, bursts of 400 I/Os, 3s apart"
    w = _w(think_time="2ms", hot_zones=[{"io_pct": 80, "space_pct": 20}, {"io_pct": 20, "space_pct": 80}])
    assert w.summary() == "4k, 50 % read, 100 % random, 4 OIO, think 2ms per I/O, hot zones 80/20 20/80"


def test_exchange_builtins_follow_the_seed():
    heavy, double = BUILTIN_WORKLOADS["exchange-heavy"], BUILTIN_WORKLOADS["exchange-double-heavy"]
    for w, mean in ((heavy, 3700), (double, 5300)):
        assert w.read_pct == pytest.approx(200 / 3) and w.random_pct == 100  # 2 reads : 1 write
        assert w.sizes()[8192] + w.sizes()[4096] == pytest.approx(0.9)  # mostly 4–8 KiB
        # a burst is 4 s of the seed's average per VM (8 VMs), then 3 s idle: the seed's mean when it takes 1 s
        assert w.bursts.ios * 8 / 4 == pytest.approx(mean, abs=4) and w.bursts.pause == 3
        assert w.bursts.ios / (w.bursts.pause + 1) * 8 == pytest.approx(mean, abs=4)
    # a second of heavy's bursts over 8 streams is 81 % of one 1GbE link's iSCSI ceiling for the mix; double heavy's
    # is beyond it (the seed: bursts "briefly exceeded" one link)
    from protolab.analysis.limits import limits_rows

    [row] = limits_rows(["iscsi"], "1GbE", 1500, heavy.block_size, heavy.read_pct)
    ceiling = row.iops
    assert round(ceiling) == 18_296
    assert heavy.bursts.ios * 8 / ceiling == pytest.approx(0.81, abs=0.01)
    assert double.bursts.ios * 8 / ceiling == pytest.approx(1.15, abs=0.01)
    assert shape_options(heavy) == {"thinktime": "3000000", "thinktime_blocks": "1848"}


def test_a_plan_overrides_a_shape_field_by_field():
    plan = load_plan_text(PLAN.format(workload='{ name = "mail", base = "exchange-heavy", '
                                               'bursts = { ios = 600, pause = "2s" } }'))
    w = plan.workloads[0]
    assert w.block_size == {8192: 60.0, 4096: 30.0, 32768: 10.0} and w.oio == 8
    assert shape_options(w) == {"thinktime": "2000000", "thinktime_blocks": "600"}


def test_the_job_file_carries_the_shape_once():
    from protolab.engine.jobfile import Stream
    from protolab.engine.targets import Access
    from protolab.plan.expand import expand

    plan = load_plan_text(PLAN.format(workload='"exchange-heavy"'))
    cell = expand(plan)[0]
    job = render_streams(cell, [Stream(0, Access("file", "psync", {}, "/tmp/x", 1 << 20), 0, 1 << 20)], runtime=5)
    lines = job.splitlines()
    for line in ("thinktime=3000000", "thinktime_blocks=1848",
                 "bssplit=8k/60:4k/30:32k/10", "rwmixread=66.6667", "iodepth=8"):
        assert lines.count(line) == 1, (line, job)
