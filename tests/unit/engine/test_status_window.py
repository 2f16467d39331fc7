"""Warm-up and measured window in one fio run: status snapshots, their differences, the warm-up's end, and
telemetry at the boundaries — on fio 3.33's real --status-interval=1 output (tests/data) and a fake fio."""

from __future__ import annotations

import random

import pytest

from fakes import CLIENT, LOCAL, FakeFio
from fakes import status_cell as _cell
from protolab.analysis.latency import merge_bins, percentiles
from protolab.engine.measure import HostRun
from protolab.engine.parse import parse_fio_json
from protolab.engine.status import (
    DocumentReader,
    documents,
    elapsed_ms,
    iops_series,
    snapshots,
    total_series,
    window_document,
)
from protolab.engine.window import run_window
from protolab.proc import FakeRunner
from protolab.run.procedure import WarmupRule
from protolab.telemetry.cgroups import RoleCpu
from protolab.telemetry.cpu import MachineCpu, ServerTrees
from protolab.telemetry.net import Counters, InterfaceTraffic, Offloads
from protolab.telemetry.telemetry_window import Snapshot as Tele
from protolab.telemetry.telemetry_window import interpolate


# fio 3.33, 2 psync jobs, 4 KiB randrw 75 % reads, runtime 4 s, --status-interval=1: 4 interval documents + the last
def _bins(jobs, d):
    return merge_bins({int(k): v for k, v in j[d]["clat_ns"]["bins"].items()} for j in jobs)


def test_a_direct_run_prints_one_cumulative_document_per_second_and_its_last():
    docs = documents(LOCAL)
    assert len(docs) == 5
    snaps = snapshots(docs)["local"]
    # the jobs' I/O time (not job_runtime, which is garbage while a job is still being set up)
    assert [s.runtime_ms for s in snaps] == [875, 1874, 2879, 3879, 4001]
    assert [s.ios for s in snaps] == sorted(s.ios for s in snaps)  # cumulative
    # the last document is fio's usual final one: the snapshot is exactly it
    last = parse_fio_json(docs[-1])
    assert snaps[-1].ios == last.read.ios + last.write.ios == 6402
    series = iops_series(snaps)
    assert len(series) == 5 and all(1500 < v < 1700 for v in series)  # rate_iops 400 per direction and job


def test_window_is_end_snapshot_minus_start_snapshot_counts_bins_and_runtime():
    docs = documents(LOCAL)
    snaps = snapshots(docs)["local"]
    r = parse_fio_json(window_document([(snaps[1], snaps[3])], client=False))
    a, b = docs[1]["jobs"], docs[3]["jobs"]
    for d in ("read", "write"):
        ios = sum(j[d]["total_ios"] for j in b) - sum(j[d]["total_ios"] for j in a)
        assert getattr(r, d).ios == ios
        # (fio's io_bytes of a running job may count an I/O its total_ios does not yet: bytes from bytes)
        assert getattr(r, d).bytes == sum(j[d]["io_bytes"] for j in b) - sum(j[d]["io_bytes"] for j in a)
        # the window's histogram: bin by bin, end minus start; its count is the window's completions
        diffed = {k: c - _bins(a, d).get(k, 0) for k, c in _bins(b, d).items() if c - _bins(a, d).get(k, 0)}
        assert getattr(r, d).bins_ns == diffed and sum(diffed.values()) == ios
        assert getattr(r, d).percentiles_us == {k: v / 1000 for k, v in percentiles(diffed).items()}
        # exact mean of the window: the sums of latencies subtracted, over the window's count
        n_a, n_b = (sum(j[d]["clat_ns"]["N"] for j in x) for x in (a, b))
        s_a, s_b = (sum(j[d]["clat_ns"]["mean"] * j[d]["clat_ns"]["N"] for j in x) for x in (a, b))
        assert getattr(r, d).lat_mean_us == pytest.approx((s_b - s_a) / (n_b - n_a) / 1000)
    both = merge_bins([r.read.bins_ns, r.write.bins_ns])
    assert r.percentiles_us == {k: v / 1000 for k, v in percentiles(both).items()}
    assert r.runtime_s == pytest.approx(2.004)
    assert r.iops == pytest.approx((snaps[3].ios - snaps[1].ios) / 2.004, rel=0.01)
    # CPU: fio's % of the runtime so far, turned into seconds and subtracted
    cpu = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000 for j in b) \
        - sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000 for j in a)
    assert r.per_host_cpu_s["local"] == pytest.approx(cpu, rel=1e-6)


def test_a_window_from_the_start_is_the_snapshot_itself():
    docs = documents(LOCAL)
    snaps = snapshots(docs)["local"]
    whole, window = parse_fio_json(docs[-1]), parse_fio_json(window_document([(None, snaps[-1])], client=False))
    assert (window.read.ios, window.write.ios) == (whole.read.ios, whole.write.ios)
    assert window.read.bins_ns == whole.read.bins_ns and window.percentiles_us == whole.percentiles_us
    assert window.iops == pytest.approx(whole.iops)


def test_a_client_run_lists_every_servers_every_snapshot_in_its_one_document():
    docs = documents(CLIENT)
    assert len(docs) == 1  # fio's client prints the servers' status only at the end
    per = snapshots(docs)
    assert sorted(per) == ["/tmp/fiot/s1.sock:8765", "/tmp/fiot/s2.sock:8765"]  # 'All clients' left out
    assert all(len(v) == 5 and v[-1].runtime_ms == 4001 for v in per.values())
    total = total_series({s: iops_series(v) for s, v in per.items()})
    assert len(total) == 5 and all(1500 < v < 1700 for v in total)
    pairs = [(v[0], v[2]) for v in per.values()]
    r = parse_fio_json(window_document(pairs, client=True))
    assert r.jobs == 2 and sorted(r.per_host_iops) == sorted(per)
    assert r.read.ios + r.write.ios == sum(e.ios - s.ios for s, e in pairs)
    assert sum(r.read.bins_ns.values()) == r.read.ios


def test_documents_read_while_fio_writes_them_come_out_whole_and_in_order():
    rng = random.Random(7)
    reader, got, i = DocumentReader(), [], 0
    while i < len(LOCAL):
        n = rng.randint(1, 40000)
        got += reader.feed(LOCAL[i:i + n])
        i += n
    assert [d["jobs"][0]["job_runtime"] for d in got] == [d["jobs"][0]["job_runtime"] for d in documents(LOCAL)]


# -- the warm-up's end ------------------------------------------------------------------------------------

def test_fixed_warmup_ends_at_the_snapshot_nearest_its_time():
    rule = WarmupRule(3.0, False, 3)
    assert not rule([100, 100], 1.88) and not rule([100, 100], 2.49)
    assert rule([100, 100, 100], 2.88)
    w = rule.record(2.88)
    assert (w.mode, w.ended_by, w.seconds) == ("fixed", "time", 2.88) and w.verdict.steady


def test_until_steady_ends_at_the_first_steady_window_or_the_maximum():
    rule = WarmupRule(30.0, True, 3)
    ramp = [100, 200, 300, 350]
    assert not any(rule(ramp[:i + 1], i + 0.9) for i in range(len(ramp)))
    assert rule([*ramp, 352, 351], 5.9)  # 350 352 351: range and slope within the SNIA limits
    w = rule.record(5.9)
    assert (w.mode, w.ended_by) == ("until-steady", "steady") and w.verdict.steady and w.seconds == 5.9
    never = WarmupRule(4.0, True, 3)
    saw = [never([100 * (i + 1)] * 0 + [100 * (k + 1) for k in range(i + 1)], i + 0.9) for i in range(4)]
    assert saw == [False, False, False, True]
    w = never.record(3.9)
    assert (w.ended_by, w.verdict.steady) == ("maximum", False) and "rising" in w.verdict.reason


def test_no_warmup_is_done_before_fio_starts():
    rule = WarmupRule(0.0, False, 5)
    assert rule([], 0.0) and rule.record(0.0).mode == "none"


# -- one fio run: a fake fio that writes the captured documents ---------------------------------------------

def test_one_direct_run_warms_up_then_measures_with_telemetry_at_both_boundaries(tmp_path):
    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    events: list = []
    fio = FakeFio(events, stream=LOCAL)
    rule = WarmupRule(plan.method.warmup, False, plan.method.steady_window)
    run = run_window(fio, cell, [HostRun("h1", None, None, streams)], warmup_max_s=1, duration_s=2,
                     warmup_done=rule, sample=lambda: events.append("sample") or len(events),
                     tick=lambda: None, interpolate=None, folder=tmp_path / "raw", tag="measure", label="cell",
                     timeout_margin_s=60, on_warmup_end=lambda: events.append("warmed"))
    # fio runs the longest warm-up + the window + 10 s (it is stopped at the window's end); the warm-up ends at the
    # first status (every job has done 872 ms of I/O), the window 2 s later, where telemetry is sampled again and
    # fio is stopped
    assert "runtime=13\n" in fio.job and "ramp_time" not in fio.job
    assert events == [("doc", 875), "sample", "warmed", ("doc", 1875), ("doc", 2879), "sample", "stopped"]
    assert (run.before, run.after) == (2, 6)
    snaps = snapshots(documents(LOCAL))["local"]
    r = parse_fio_json(run.window_doc)
    assert r.read.ios + r.write.ios == snaps[2].ios - snaps[0].ios
    assert run.warmup_s == 0.872 and run.window_s == pytest.approx(2.005)
    assert run.warmup_series == pytest.approx(iops_series(snaps)[:1])
    assert run.series == pytest.approx(iops_series(snaps)[1:3]) and list(run.series_by_host) == ["local"]
    assert rule.record(run.warmup_s).ended_by == "time"


def test_until_steady_in_one_direct_run(tmp_path):
    plan, cell, streams = _cell(tmp_path, "30s", "1s")
    events: list = []
    rule = WarmupRule(30, True, 3)
    run = run_window(FakeFio(events, stream=LOCAL), cell, [HostRun("h1", None, None, streams)], warmup_max_s=30,
                     duration_s=1, warmup_done=rule, sample=lambda: events.append("sample") or len(events),
                     tick=lambda: None, interpolate=None, folder=tmp_path / "raw", tag="measure", label="cell",
                     timeout_margin_s=60)
    # 1602, 1601, 1606 IOPS: steady at the third status; the window is the next second
    assert events == [("doc", 875), ("doc", 1875), ("doc", 2879), "sample", ("doc", 3879), "sample", "stopped"]
    assert rule.record(run.warmup_s).ended_by == "steady" and run.warmup_s == 2.877
    assert len(run.warmup_series) == 3 and len(run.series) == 1


class Clock:
    t = 100.0

    def __call__(self):
        return self.t


class Agent:
    """A fio server agent as the client run sees it."""

    def __init__(self, n):
        self.n = n

    def client_arg(self):
        return f"sock:/tmp/fiot/s{self.n}.sock"


def test_a_client_run_places_its_boundaries_afterwards_and_interpolates_telemetry(tmp_path):
    plan, cell, streams = _cell(tmp_path, "1s", "2s")

    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock = clock
    rule = WarmupRule(1, False, 3)
    hosts = [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None, streams[1:])]
    run = run_window(fio, cell, hosts, warmup_max_s=1, duration_s=2, warmup_done=rule, sample=lambda: None,
                     tick=lambda: clock.t, interpolate=lambda a, b, t: t, folder=tmp_path / "raw",
                     tag="measure", label="cell", timeout_margin_s=60, clock=clock)
    assert not run.live and rule.record(run.warmup_s).ended_by == "time"
    per = snapshots(documents(CLIENT))
    # boundaries: the statuses where every job's I/O time reaches the warm-up (0.872 s) and 2 s more (2.872 s);
    # each server's k-th status came at the same time
    s1, s2 = per["/tmp/fiot/s1.sock:8765"], per["/tmp/fiot/s2.sock:8765"]
    assert run.warmup_s == 0.872 and run.window_s == pytest.approx(2.0)
    r = parse_fio_json(run.window_doc)
    assert r.read.ios + r.write.ios == (s1[2].ios - s1[0].ios) + (s2[2].ios - s2[0].ios)
    # status k came no later than the client's printing (seen at 106.02 s) less the jobs' I/O time from it to
    # their end (the job furthest from its end: 4001 - 872 ms, and 4001 - 2872 ms)
    assert run.before == pytest.approx(106.02 - 3.129) and run.after == pytest.approx(106.02 - 1.129)
    assert sorted(run.series_by_host) == sorted(per) and len(run.series) == 2
    # the client prints at its end: the window's intervals come afterwards, both servers merged, none streamed
    assert not run.streamed and [iv.t_s for iv in run.intervals] == [1.001, 2.0]  # the jobs' I/O time
    assert [iv.iops for iv in run.intervals] == pytest.approx(run.series)
    assert sum(iv.ios for iv in run.intervals) == (s1[2].ios - s1[0].ios) + (s2[2].ios - s2[0].ios)


def test_a_client_run_with_storage_traffic_places_its_boundaries_where_the_traffic_reached_their_share(tmp_path):
    """Bytes on the storage ports are I/Os done: status k is read where the traffic we counted reached the share
    of the run's I/Os fio had done by k — even when fio's client printed seconds after the last I/O."""
    plan, cell, streams = _cell(tmp_path, "1s", "2s")

    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock = clock
    per = snapshots(documents(CLIENT))
    ios_end = sum(v[-1].ios for v in per.values())

    def traffic(t):  # 1,000 bytes per I/O, all of them between 100 s and 104 s, then nothing until the print
        return 5e6 + 1000 * ios_end * min(1.0, max(0.0, (t - 100.0) / 4.0))

    samples = []

    def tick():
        samples.append(clock.t)
        return clock.t

    run = run_window(fio, cell, [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None,
                                                                                    streams[1:])],
                     warmup_max_s=1, duration_s=2, warmup_done=WarmupRule(1, False, 3), sample=lambda: None,
                     tick=tick, interpolate=lambda a, b, t: t, folder=tmp_path / "raw", tag="measure",
                     label="cell", timeout_margin_s=60, clock=clock, progress=lambda t: (t, traffic(t)))
    s1, s2 = per["/tmp/fiot/s1.sock:8765"], per["/tmp/fiot/s2.sock:8765"]
    share = [(s1[k].ios + s2[k].ios) / ios_end for k in (0, 2)]
    assert run.before == pytest.approx(100.0 + 4.0 * share[0], abs=0.01)
    assert run.after == pytest.approx(100.0 + 4.0 * share[1], abs=0.01)
    assert run.after < 104.0 < 106.02 - 1.129  # inside the traffic, not where the print placed it

    # no traffic counted: placed by the client's print, as before
    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock = clock
    run = run_window(fio, cell, [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None,
                                                                                    streams[1:])],
                     warmup_max_s=1, duration_s=2, warmup_done=WarmupRule(1, False, 3), sample=lambda: None,
                     tick=lambda: clock.t, interpolate=lambda a, b, t: t, folder=tmp_path / "raw", tag="measure",
                     label="cell", timeout_margin_s=60, clock=clock, progress=lambda t: None)
    assert run.after == pytest.approx(106.02 - 1.129)


def test_telemetry_is_read_on_the_line_between_two_samples():
    machine, servers, ifaces = MachineCpu(), ServerTrees({}), InterfaceTraffic(FakeRunner(), [])
    roles, offloads = RoleCpu(None), Offloads(FakeRunner(), [])  # type: ignore[arg-type]
    a = Tele(10.0, ((machine, (5.0, 20.0)), (servers, {"tgtd": 1.0, "gone": None}),
                    (ifaces, {("s", "eth0"): Counters(1000, 0, 10, 0)}), (roles, {"servers": 2.0}),
                    (offloads, {("s", "eth0"): False})))
    b = Tele(11.0, ((machine, (6.0, 22.0)), (servers, {"tgtd": 2.0, "gone": 3.0}),
                    (ifaces, {("s", "eth0"): Counters(3000, 0, 30, 0)}), (roles, {"servers": 4.0}), (offloads, {})))
    m = interpolate(a, b, 10.25)
    assert (m.t, *m.of("machine_cpu")) == (10.25, 5.25, 20.5)
    assert m.of("servers_cpu") == {"tgtd": 1.25, "gone": None} and m.of("roles_cpu") == {"servers": 2.5}
    assert m.of("interfaces")[("s", "eth0")] == Counters(1500, 0, 15, 0)
    assert m.of("offloads") == {("s", "eth0"): False}
    assert interpolate(a, b, 20.0).t == 11.0  # never beyond the samples


def test_statuses_sent_while_jobs_are_set_up_count_as_no_time_and_no_io():
    """A server still connecting its jobs sends statuses with job_runtime since an unset epoch and no I/O:
    they weigh nothing, and a window starting there counts its jobs from their start."""
    docs = documents(CLIENT)
    first = next(j for j in docs[0]["client_stats"] if j.get("hostname", "").endswith("s1.sock"))
    setup = {**first, "job_runtime": 2022778, "usr_cpu": 99.0,
             **{d: {**first[d], "runtime": 0, "total_ios": 0, "io_bytes": 0,
                    "clat_ns": {"N": 0, "mean": 0.0, "bins": {}}} for d in ("read", "write")}}
    docs[0]["client_stats"].insert(0, setup)
    per = snapshots(docs)
    s1 = per["/tmp/fiot/s1.sock:8765"]
    assert len(s1) == 6 and s1[0].runtime_ms == 0 and s1[0].ios == 0
    assert iops_series(s1)[0] == 0.0 and iops_series(s1)[1] == pytest.approx(718 / 0.892)
    r = parse_fio_json(window_document([(s1[0], s1[2])], client=True))
    assert r.read.ios + r.write.ios == s1[2].ios  # from the job's start, not minus the setup status
    j = s1[2].jobs[0]
    assert r.per_host_cpu_s["/tmp/fiot/s1.sock:8765"] == pytest.approx(
        (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000)


def test_seconds_count_in_the_io_time_of_the_job_that_started_last():
    """Jobs connect and log in first, and may start seconds apart: a warm-up of W s means every job did W s of I/O."""
    docs = documents(LOCAL)
    for d in docs[:2]:  # stream-1 still logging in during the first two statuses
        d["jobs"][1] = {**d["jobs"][1], "job_runtime": 2022778,
                        **{k: {**d["jobs"][1][k], "runtime": 0, "total_ios": 0} for k in ("read", "write")}}
    per = snapshots(docs)
    assert [elapsed_ms(per, i) for i in range(5)] == [0, 0, 2877, 3876, 4000]
    rule = WarmupRule(1.0, False, 3)
    series = iops_series(per["local"])
    assert [rule(series[:i + 1], elapsed_ms(per, i) / 1000) for i in range(3)] == [False, False, True]


def test_a_window_with_failed_ios_counts_only_those_answered_with_data():
    """fio's total_ios counts each queued I/O, a failed one too; with errors in the window its I/Os are its latency
    samples (those completed without one): 300 answered of 5000 queued, 4700 failed back while a path was down."""
    from protolab.engine.status import diff_job

    def job(ios: int, n: int, err: int, ms: float) -> dict:
        return {"jobname": "j", "job_runtime": ms, "total_err": err,
                "read": {"total_ios": ios, "io_bytes": n * 4096, "runtime": ms, "clat_ns": {"N": n, "mean": 1e5}}}

    w = diff_job(job(100, 100, 0, 1000.0), job(5100, 400, 4700, 11000.0))
    assert w["total_err"] == 4700 and w["read"]["total_ios"] == 300 and w["read"]["iops"] == pytest.approx(30.0)
    clean = diff_job(job(100, 98, 0, 1000.0), job(1100, 1097, 0, 11000.0))  # no error: fio's count as it is
    assert clean["read"]["total_ios"] == 1000 and clean["read"]["iops"] == pytest.approx(100.0)
