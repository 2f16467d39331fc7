"""A client run read as its servers' statuses come (fio patch 0004): where it stops, when each status came, and
what a client that prints everything at the end still gets. Driven by captured fio 3.33 output of 2 servers."""

from __future__ import annotations

import copy
import threading

import pytest
from test_status_window import Agent, Clock

from fakes import CLIENT, FakeFio
from fakes import status_cell as _cell
from protolab.engine.fio import Fio
from protolab.engine.measure import HostRun
from protolab.engine.parse import parse_fio_json
from protolab.engine.status import documents, iops_series, snapshots, total_series
from protolab.engine.streamed import Ahead, Streamed
from protolab.engine.window import boundaries, run_window
from protolab.run.procedure import WarmupRule

S1, S2 = "/tmp/fiot/s1.sock:8765", "/tmp/fiot/s2.sock:8765"


def _split(text: str) -> list[dict]:
    """The captured one-document client run as the patched client prints it: one document per server and status,
    s1's before s2's."""
    per: dict[str, dict[str, list[dict]]] = {}
    for j in documents(text)[0]["client_stats"]:
        if j.get("jobname") != "All clients":
            per.setdefault(f"{j['hostname']}:{j['port']}", {}).setdefault(j["jobname"], []).append(j)
    n = min(len(v) for jobs in per.values() for v in jobs.values())
    return [{"client_stats": [v[k] for v in jobs.values()]} for k in range(n) for jobs in per.values()]


def test_the_streamed_documents_give_the_snapshots_of_the_one_document():
    whole, streamed = snapshots(documents(CLIENT)), snapshots(_split(CLIENT))
    assert sorted(whole) == sorted(streamed) == [S1, S2]
    for src in whole:
        assert [s.jobs for s in streamed[src]] == [s.jobs for s in whole[src]]


def test_a_status_cut_short_is_not_a_snapshot():
    docs = _split(CLIENT)
    two = []
    for doc in docs:  # two jobs per server: the job's twin under another name
        twin = copy.deepcopy(doc["client_stats"][0])
        twin["jobname"] = "twin"
        two.append({"client_stats": [*doc["client_stats"], twin]})
    two.insert(4, {"client_stats": [two[4]["client_stats"][0]]})  # s1's third status with one job of two
    per = snapshots(two)
    assert [len(s.jobs) for s in per[S1]] == [2] * 5 and len(per[S2]) == 5


@pytest.mark.parametrize("warmup, duration, start, end", [(1, 2, 0, 2), (1, 1, 0, 1), (2, 2, 1, 3), (0, 2, -1, 1)])
def test_it_stops_at_the_status_boundaries_places_afterwards(warmup, duration, start, end):
    clock, docs = Clock(), _split(CLIENT)
    rule = WarmupRule(warmup, False, 3)
    s = Streamed(2, duration * 1000.0, rule, clock, start=-1 if warmup == 0 else None)
    stops = []
    for k, doc in enumerate(docs):
        clock.t = 100.0 + k * 0.5
        if s(doc):
            stops.append(k)
            break
    after = boundaries(snapshots(documents(CLIENT)), WarmupRule(warmup, False, 3), duration,
                       start=-1 if warmup == 0 else None)
    assert (s.start, s.end) == (start, end) == after
    assert stops == [2 * end + 1]  # stopped at s2's status `end`: the later of the two servers
    assert s.streamed and s.at(end, 999.0) == 100.0 + (2 * end + 1) * 0.5
    assert s.at(end + 1, 999.0) == 999.0  # a status that came after the stop: the run's end
    # what it keeps to judge by: I/Os and I/O time, no histograms (the run's output has them)
    kept = [j for v in s.per.values() for snap in v for j in snap.jobs]
    assert kept and not any("clat_ns" in j.get(d, {}) for j in kept for d in ("read", "write"))


def test_a_client_that_prints_everything_at_the_end_is_never_stopped():
    s = Streamed(2, 2000.0, WarmupRule(1, False, 3), Clock())
    assert s(documents(CLIENT)[0]) is False
    assert s.whole and not s.streamed and s.end is None


def test_it_waits_for_every_server():
    s = Streamed(3, 1000.0, WarmupRule(0, False, 3), Clock(), start=-1)
    assert not any(s(doc) for doc in _split(CLIENT))  # a third server never reported
    assert s.end is None


def test_a_streamed_client_run_stops_at_the_windows_end_and_reads_telemetry_when_its_statuses_came(tmp_path):
    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock, fio.streamed = clock, True
    rule = WarmupRule(1, False, 3)
    hosts = [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None, streams[1:])]
    run = run_window(fio, cell, hosts, warmup_max_s=1, duration_s=2, warmup_done=rule, sample=lambda: None,
                     tick=lambda: clock.t, interpolate=lambda a, b, t: t, folder=tmp_path / "raw",
                     tag="measure", label="cell", timeout_margin_s=60, clock=clock)
    # stopped once s2's third status (k = 2, 102.1 s) came: each server then sent one more, none after
    assert fio.events.index("stopped") == 6 and fio.events[-2:] == [("status", 3, 0), ("status", 3, 1)]
    per = snapshots(documents(CLIENT))
    s1, s2 = per[S1], per[S2]
    assert run.warmup_s == 0.872 and run.window_s == pytest.approx(2.0)
    r = parse_fio_json(run.window_doc)
    assert r.read.ios + r.write.ios == (s1[2].ios - s1[0].ios) + (s2[2].ios - s2[0].ios)
    # telemetry read when status 0 and status 2 had come from both servers (s2's, 0.1 s after s1's)
    assert run.before == pytest.approx(100.1) and run.after == pytest.approx(102.1)
    assert [iv.t_s for iv in run.intervals] == [1.001, 2.0] and rule.record(run.warmup_s).ended_by == "time"


def test_a_streamed_client_run_says_when_the_warmup_ended_as_it_happens_and_once(tmp_path):
    """A fault's schedule starts with the window (run.fault_schedule): told when the status that ends the warm-up has
    come from every server (s2's status 0, at 100.1 s), not after the run, and only then."""
    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock, fio.streamed = clock, True
    told: list[float] = []
    seen: list[dict] = []
    hosts = [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None, streams[1:])]
    run_window(fio, cell, hosts, warmup_max_s=1, duration_s=2, warmup_done=WarmupRule(1, False, 3),
               sample=lambda: None, tick=lambda: clock.t, interpolate=lambda a, b, t: t, folder=tmp_path / "raw",
               tag="measure", label="cell", timeout_margin_s=60, clock=clock, on_warmup_end=lambda: told.append(clock.t),
               on_document=seen.append)
    assert told == [pytest.approx(100.1)]
    # each status as it came, up to the stop (s2's third: six documents), for a fault's schedule
    assert len(seen) == 6 and all("client_stats" in d for d in seen)


def test_statuses_that_came_late_are_placed_by_the_jobs_end_instead(tmp_path):
    """Busy servers sent statuses 0-2 in one burst at 103 s: each is placed by the jobs' end (the client's exit,
    103.3 s, less the jobs' I/O time after it), the earlier bound, not by when it came."""
    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock, fio.streamed, fio.burst_until = clock, True, 103.0
    hosts = [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None, streams[1:])]
    run = run_window(fio, cell, hosts, warmup_max_s=1, duration_s=2, warmup_done=WarmupRule(1, False, 3),
                     sample=lambda: None, tick=lambda: clock.t, interpolate=lambda a, b, t: t,
                     folder=tmp_path / "raw", tag="measure", label="cell", timeout_margin_s=60, clock=clock)
    # the jobs' last statuses (3892 and 3872 ms) came at 103.0 and 103.1 s, the client exited at 103.3 s
    assert run.before == pytest.approx(103.3 - 3.0) and run.after == pytest.approx(103.3 - 1.0)


def test_each_status_every_server_has_sent_gives_the_progress_bar_its_iops():
    got: list[float] = []
    s = Streamed(2, 10_000.0, WarmupRule(0, False, 3), Clock(), start=-1, on_iops=got.append)
    for doc in _split(CLIENT):
        s(doc)
    per = snapshots(documents(CLIENT))
    assert got == pytest.approx(total_series({k: iops_series(v) for k, v in per.items()}))
    assert len(got) == 5 and all(v > 0 for v in got)


class _Groups:
    """Role cgroups as the fio adapter sees them: what joins which."""

    def wrap(self, role, argv, netns=None):
        return ["JOIN", role, *argv]


def _argv(call):
    from protolab.proc import FakeRunner

    runner = FakeRunner()
    fio = Fio("/fake/fio", runner, cgroups=_Groups())
    with pytest.raises(NotImplementedError):  # FakeRunner records the command and spawns nothing
        call(fio)
    return list(runner.calls[-1][0])


def test_a_direct_run_joins_loadgen_and_a_client_run_stays_with_protolab_streamed_when_read_live(tmp_path):
    direct = _argv(lambda f: f.run_job(tmp_path / "j.fio", tmp_path / "o.json"))
    assert direct[:2] == ["JOIN", "loadgen"] and "FIO_CLIENT_STREAM=1" not in direct
    live = _argv(lambda f: f.run_clients([("sock:s", tmp_path / "j.fio")], tmp_path / "o.json", status_interval=1,
                                         on_status=lambda doc: False))
    assert live[0] == "env" and "JOIN" not in live and "FIO_CLIENT_STREAM=1" in live
    assert live[live.index("/fake/fio") + 1:][:1] == ["--output-format=json+"]
    whole = _argv(lambda f: f.run_clients([("sock:s", tmp_path / "j.fio")], tmp_path / "o.json"))
    assert "JOIN" not in whole and "FIO_CLIENT_STREAM=1" not in whole


def test_the_window_is_worked_out_while_fio_ends_its_jobs_and_is_the_same(tmp_path, monkeypatch):
    """Stopped at the window's end, the window's figures are worked out on a thread of their own from the statuses so
    far, and taken once the run's statuses, read whole, agree: the same figures the caller would work out."""
    from protolab.engine import window as w

    plan, cell, streams = _cell(tmp_path, "1s", "2s")
    fio, clock = FakeFio([], stream=CLIENT), Clock()
    fio.clock, fio.streamed = clock, True
    calls = []

    def result(*args, **kw):
        calls.append(threading.current_thread().name)
        return real(*args, **kw)

    real = w._result
    monkeypatch.setattr(w, "_result", result)
    hosts = [HostRun("h1", Agent(1), None, streams[:1]), HostRun("h2", Agent(2), None, streams[1:])]
    run = run_window(fio, cell, hosts, warmup_max_s=1, duration_s=2, warmup_done=WarmupRule(1, False, 3),
                     sample=lambda: None, tick=lambda: clock.t, interpolate=lambda a, b, t: t, folder=tmp_path / "raw",
                     tag="measure", label="cell", timeout_margin_s=60, clock=clock)
    assert calls == ["protolab-window-ahead"]  # not again on the caller's thread
    again = real(run.output, snapshots(documents(run.output.read_text())), 0, 2, run.before, run.after, False, fio, 1)
    assert run == again and run.before == pytest.approx(100.1) and run.after == pytest.approx(102.1)


def test_a_window_worked_out_ahead_is_dropped_when_the_whole_run_disagrees():
    docs = _split(CLIENT)
    per = snapshots(docs)
    ahead = Ahead(lambda p, s, e: (s, e, sorted(p)))
    assert ahead.result(per, 0, 2) is None  # never started (a client that does not stream)
    ahead.start(docs[:6], 0, 2)  # status 2 of both servers
    assert ahead.result(per, 0, 2) == (0, 2, [S1, S2])
    assert ahead.result(per, 1, 3) is None  # placed elsewhere on the whole run
    changed = copy.deepcopy(docs)
    changed[2]["client_stats"][0]["read"]["total_ios"] += 1  # s1's status 1 read otherwise
    assert ahead.result(snapshots(changed), 0, 2) is None
    short = Ahead(lambda p, s, e: "worked out")
    short.start(docs[:5], 0, 2)  # s2's status 2 not there yet: nothing is worked out
    assert short.result(per, 0, 2) is None
