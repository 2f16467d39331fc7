"""Long runs: per-interval figures merged from fio's statuses (real captured output), streamed as they come;
the trend, onset and SLO arithmetic; the plan's interval, slo and [stage.age]; aging sequences in the schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest

import protolab.engine.window as window_mod
from fakes import CLIENT, LOCAL, FakeFio
from fakes import status_cell as _cell
from protolab.analysis.latency import merge_bins, percentiles
from protolab.analysis.trend import onset_s, slo_share, trend
from protolab.engine.intervals import interval, light, window_intervals
from protolab.engine.measure import HostRun
from protolab.engine.status import documents, iops_series, snapshots, total_series, window_jobs
from protolab.errors import ProtolabError
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.run.procedure import WarmupRule
from protolab.run.schedule import pending


def _bins_between(a, b):
    hists = []
    for j in window_jobs(a, b):
        for d in ("read", "write"):
            if d in j:
                hists.append({int(k): int(v) for k, v in j[d]["clat_ns"]["bins"].items()})
    return merge_bins(hists)


def test_intervals_of_a_direct_run_add_up_to_the_run_and_read_percentiles_from_the_difference_of_bins():
    snaps = snapshots(documents(LOCAL))["local"]
    ivs = window_intervals({"local": snaps}, -1, len(snaps) - 1, 1)
    assert len(ivs) == len(snaps) == 5
    assert sum(iv.ios for iv in ivs) == snaps[-1].ios  # every I/O counted once
    assert [iv.iops for iv in ivs] == pytest.approx(iops_series(snaps))
    # each interval ends where the jobs' I/O time got to (statuses are not always a second apart)
    assert [iv.t_s for iv in ivs] == [round(min(s.job_runtimes_ms) / 1000, 3) for s in snaps]
    # the second interval's p95 is the p95 of the bins that arrived in it, over both jobs and both directions
    want = percentiles(_bins_between(snaps[0], snaps[1]), (95.0, 99.0))
    assert ivs[1].lat_p95_us == want["p95"] / 1000 and ivs[1].lat_p99_us == want["p99"] / 1000
    assert ivs[1].lat_p95_us > 0 and ivs[1].mbps > 0
    # 4 KiB I/Os: MB/s is about IOPS × 4096 bytes (fio's total_ios counts issued I/Os, io_bytes completed ones)
    assert ivs[2].mbps == pytest.approx(ivs[2].iops * 4096 / 1e6, rel=0.01)


def test_intervals_of_a_client_run_merge_both_servers():
    per = snapshots(documents(CLIENT))
    assert len(per) == 2
    n = min(len(v) for v in per.values())
    ivs = window_intervals(per, -1, n - 1, 1)
    assert sum(iv.ios for iv in ivs) == sum(v[n - 1].ios for v in per.values())
    assert [iv.iops for iv in ivs] == pytest.approx(total_series({s: iops_series(v[:n]) for s, v in per.items()}))
    a, b = ([v[0] for v in per.values()], [v[1] for v in per.values()])
    both = merge_bins([_bins_between(x, y) for x, y in zip(a, b)])
    assert ivs[1].lat_p95_us == percentiles(both, (95.0,))["p95"] / 1000


def test_a_light_snapshot_keeps_what_series_and_boundaries_need():
    snaps = snapshots(documents(LOCAL))["local"]
    s = light(snaps[2])
    assert (s.ios, s.runtime_ms, s.job_runtimes_ms) == (snaps[2].ios, snaps[2].runtime_ms, snaps[2].job_runtimes_ms)
    assert "clat_ns" not in s.jobs[0]["read"]
    full = interval([(snaps[2], snaps[3])], 1.0)
    assert interval([(snaps[2], snaps[3])], 1.0) == full


def test_a_direct_run_streams_each_interval_as_its_status_comes_and_its_window_is_unchanged(tmp_path):
    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    events: list = []
    got = []
    run = window_mod.run_window(
        FakeFio(events, stream=LOCAL), cell, [HostRun("h1", None, None, streams)], warmup_max_s=1, duration_s=2,
        warmup_done=WarmupRule(1, False, 5), sample=lambda: None, tick=lambda: None, interpolate=None,
        folder=tmp_path / "raw", tag="measure", label="cell", timeout_margin_s=60,
        on_interval=lambda iv: (got.append(iv), events.append(("interval", iv.t_s))))
    # each interval is handed over right after its status, before fio's next one is read
    rounded = [("interval", round(e[1], 2)) if e[0] == "interval" else e for e in events[:-1]] + events[-1:]
    assert rounded == [("doc", 875), ("doc", 1875), ("interval", 1.0), ("doc", 2879), ("interval", 2.0), "stopped"]
    assert run.streamed and run.intervals == got
    snaps = snapshots(documents(LOCAL))["local"]
    assert [iv.iops for iv in got] == pytest.approx(run.series)
    assert sum(iv.ios for iv in got) == snaps[2].ios - snaps[0].ios
    # the window's document is the same as from the whole statuses (the live run dropped old histograms)
    from protolab.engine.status import window_document

    assert run.window_doc == window_document([(snaps[0], snaps[2])], client=False)


def test_the_status_interval_reaches_fio_and_the_window_is_counted_in_intervals(tmp_path):
    plan, cell, streams = _cell(tmp_path, "0s", "2s")
    calls = {}

    class Spy(FakeFio):
        def run_job(self, job, output, **kw):
            calls.update(kw)
            return super().run_job(job, output, **kw)

    run = window_mod.run_window(Spy([], stream=LOCAL), cell, [HostRun("h1", None, None, streams)], warmup_max_s=0,
                                duration_s=2, warmup_done=WarmupRule(0, False, 5), sample=lambda: None,
                                tick=lambda: None, interpolate=None, folder=tmp_path / "raw", tag="measure",
                                label="cell", timeout_margin_s=60, interval_s=1)
    assert calls["status_interval_s"] == 1
    snaps = snapshots(documents(LOCAL))["local"]
    # no warm-up: from the jobs' start, each interval ending at the jobs' I/O time
    assert [iv.t_s for iv in run.intervals] == [round(min(snaps[k].job_runtimes_ms) / 1000, 3) for k in (0, 1)]


def test_trend_of_a_known_line_with_autocorrelated_noise_holds_the_true_slope():
    rng = np.random.default_rng(7)
    t = np.arange(1, 3601) * 10.0  # 10 h at 10 s
    noise = np.zeros(t.size)
    for i in range(1, t.size):  # AR(1), φ = 0.9: bursts last tens of intervals
        noise[i] = 0.9 * noise[i - 1] + rng.normal(0, 20)
    y = 1000.0 - 1000.0 * 0.02 * t / 3600 + noise  # −2 % of 1000 per hour
    tr = trend(t, y)
    mean = y.mean()
    true = -20.0 / mean * 100
    assert tr.lo < true < tr.hi and tr.clear and tr.blocks == 10
    assert tr.sentence() == "−1.99 %/h (−2.26 to −1.71)"  # two decimals: the interval is narrower than 1
    flat = trend(t, 1000.0 + noise)
    assert not flat.clear and flat.sentence().startswith("no clear change (")


def test_trend_numbers_and_limits():
    tr = trend([10, 20, 30, 40, 50, 60, 70, 80], [100, 99, 98, 97, 96, 95, 94, 93])
    # slope −0.1 /s on a mean of 96.5: −373 %/h, exactly (a straight line has no spread)
    assert tr.pct_per_h == pytest.approx(-0.1 * 3600 / 96.5 * 100)
    assert tr.lo == pytest.approx(tr.hi) and tr.blocks == 4
    assert trend([1, 2, 3, 4, 5, 6, 7], [1] * 7) is None  # fewer than 4 blocks of 2
    assert trend(list(range(10)), [0.0] * 10) is None  # nothing to be a share of


def test_onset_is_the_end_of_the_first_steady_window_in_seconds():
    ramp = [100, 300, 600, 900, 1000, 1000, 1001, 999, 1000, 1000, 1002]
    # the first 5-interval window that passes the SNIA rule is intervals 3..7 (range 10.3 % of the mean, the
    # fitted line's excursion 8.1 %); 2..6 spans 44 %. Onset: the end of interval 7, at 10 s intervals
    assert onset_s(ramp, 10, window=5) == 80.0
    assert onset_s([1, 100, 1, 100, 1, 100], 1, window=5) is None
    assert onset_s([5, 5], 1, window=5) is None
    # intervals of unequal length (a bursty load's statuses came 3 s apart): the onset is the steady window's end
    assert onset_s(ramp, 10, window=5, times=[3.0 * (k + 1) for k in range(len(ramp))]) == 24.0


def test_slo_share_counts_intervals_over_the_objective():
    s = slo_share([10_000, 25_000, None, 30_000, 19_999], "p95", 20_000)
    assert (s.missed, s.intervals, s.pct) == (2, 4, 50.0)
    assert s.sentence() == "p95 over 20 ms in 2 of 4 intervals (50.0 %)"
    assert slo_share([], "p99", 500).sentence() == "p99 over 500 µs in 0 of 0 intervals (0.0 %)"


PLAN = """
name = "lr"
baseline = "a"
workloads = ["tr3808-4k"]
[[configurations]]
name = "a"
target = "/tmp/x"
[[configurations]]
name = "b"
target = "/tmp/y"
[[load_points]]
streams = 1
[method]
repeats = 1
{method}
{stage}
"""


def _plan(method="", stage=""):
    return load_plan_text(PLAN.format(method=method, stage=stage), source="p.toml")


def test_plan_interval_slo_and_age():
    p = _plan('interval = "10s"\nslo = { p95 = "20ms" }', '[stage.age]\nduration = "30s"\nevery = "10s"')
    assert p.method.interval == 10 and p.method.slo.limit_us == 20_000 and p.method.slo.metric == "p95"
    assert p.stage.age.steps == 3 and p.age_steps == 3
    assert "series every 10s, objective p95 ≤ 20ms" in p.method.summary()
    assert _plan('slo = { p99 = "500us" }').method.slo.limit_us == pytest.approx(500)
    assert _plan().method.interval == 1 and _plan().method.slo is None


@pytest.mark.parametrize("method,stage,message", [
    ('interval = "1.5s"', "", "p.toml:15: method.interval: interval must be a whole number of seconds from 1s to 1h (got '1.5s')"),
    ("interval = inf", "", "method.interval: interval must be a whole number of seconds from 1s to 1h (got inf)"),
    ('slo = { p95 = "fast" }', "", "expected a latency like '20ms' or '500us', got 'fast'"),
    ('slo = { p95 = "1ms", p99 = "2ms" }', "", "slo takes exactly one of p95, p99 or mean"),
    ("", '[stage.age]\nduration = "25s"\nevery = "10s"', "is not a whole number of age.every"),
    ("", '[stage.age]\nduration = "5s"\nevery = "10s"', "age.every (10s) is longer than age.duration (5s)"),
    ('repeats = { min = 2, max = 4, until_ci_pct = 3 }', '[stage.age]\nduration = "20s"\nevery = "10s"',
     "stage.age with adaptive repeats"),
])
def test_plan_errors_name_the_field_in_one_line(method, stage, message):
    text = PLAN.format(method=method, stage=stage).replace("repeats = 1\n" + method, method) if "repeats" in method \
        else PLAN.format(method=method, stage=stage)
    with pytest.raises(ProtolabError) as e:
        load_plan_text(text, source="p.toml")
    assert message in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("p.toml")


def test_an_aging_sequence_is_consecutive_steps_and_is_measured_again_whole_when_broken():
    p = _plan(stage='[stage.age]\nduration = "30s"\nevery = "10s"')
    cells = expand(p)
    assert [c.id for c in cells] == [f"tr3808-4k__{c}__h1s1q4__r1__a{k}" for c in "ab" for k in range(3)]
    assert [c.step("age").age_s for c in cells] == [0, 10, 20, 0, 10, 20]
    from protolab.run.recording import coords

    assert coords(cells[1])["stage"] == "age" and coords(cells[1])["age_s"] == 10

    class Rec:
        def __init__(self, cell_id):
            self.cell_id, self.failed = cell_id, False

    # a's sequence whole, b's first step only (interrupted in its second): b is measured again from age 0
    done = [Rec(c.id) for c in cells[:4]]
    assert [c.id for c in pending(p, done)] == [c.id for c in cells[3:]]
    assert pending(p, [Rec(c.id) for c in cells]) == []


def test_no_aging_keeps_the_old_ids():
    assert [c.id for c in expand(_plan())] == ["tr3808-4k__a__h1s1q4__r1", "tr3808-4k__b__h1s1q4__r1"]
    assert all(c.step("age") is None and c.steps == () for c in expand(_plan()))


def test_math_is_finite_for_empty_intervals():
    snaps = snapshots(documents(LOCAL))["local"]
    iv = interval([(snaps[1], snaps[1])], 1.0)  # no time passed: nothing, and no division by zero
    assert (iv.ios, iv.iops, iv.lat_p95_us, iv.lat_mean_us) == (0, 0.0, None, None)
    assert not math.isnan(iv.mbps)


def test_a_run_stored_before_interval_slo_and_stage_resumes_as_the_same_plan():
    from protolab.run.resume import differences

    plan = _plan()
    stored = plan.model_dump(mode="json")
    for k in ("interval", "slo"):
        del stored["method"][k]
    del stored["stage"]

    class Old:  # a run directory whose manifest predates plan formats (no plan_format: the oldest)
        def manifest(self):
            from protolab.results.manifest import Manifest

            return Manifest(plan=stored)

    assert differences(Old(), plan, "", {}) == []
    aged = _plan(stage='[stage.age]\nduration = "30s"\nevery = "10s"')
    assert differences(Old(), aged, "", {}) == ["plan (this protolab reads the stored plan text differently)"]


def test_a_status_whose_io_time_has_not_moved_ends_no_interval_and_loses_no_io():
    snaps = snapshots(documents(LOCAL))["local"]
    import copy

    stalled = [snaps[0], snaps[1], type(snaps[2])(snaps[2].source, copy.deepcopy(snaps[2].jobs)), snaps[3], snaps[4]]
    # status 2 with status 1's I/O time: a busy machine ran fio's status thread before the jobs counted their time
    for j, j1 in zip(stalled[2].jobs, snaps[1].jobs):
        for d in ("read", "write"):
            j[d] = {**j[d], "runtime": j1[d]["runtime"]}
    ivs = window_intervals({"local": stalled}, -1, 4, 1)
    # the interval ending at status 3 spans statuses 2 and 3
    assert [iv.t_s for iv in ivs] == [round(min(snaps[k].job_runtimes_ms) / 1000, 3) for k in (0, 1, 3, 4)]
    assert sum(iv.ios for iv in ivs) == snaps[4].ios and all(iv.iops > 0 for iv in ivs)
    assert ivs[2].ios == snaps[3].ios - snaps[1].ios
