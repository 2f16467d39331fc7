"""One fio run per cell and repeat: the warm-up, then the measured window, in the same jobs.

fio runs once with ``--status-interval=1``: every second it reports every job's cumulative counters (see
``engine.status``). The warm-up ends at the first snapshot where ``warmup_done(iops_series, seconds)`` says so; the
measured window is the ``duration`` seconds of snapshots after it, and its figures are the end snapshot minus the
start snapshot. The connections, logins and caches the window measures are those the warm-up warmed.

Telemetry must cover the window only. A direct run's documents are read as fio writes them, so ``sample()`` is called
at the very moment each boundary snapshot appears, and fio is stopped right after the window's end. fio's client
prints each server's status as it comes (protolab's fio patch 0004; ``streamed.Streamed``), and it is stopped once
every server has sent the window's end status; ``tick()`` is sampled every second meanwhile (on a thread of its own:
``Fio._watch``), each status is parsed once (``status.StatusFile``), the window's figures worked out as fio ends its
jobs (``streamed.Ahead``), the boundaries after, ``interpolate`` reads the telemetry at the boundaries' instants:
where the lab's storage traffic had got to fio's share of I/Os, or when the statuses came (see ``_client``). A client
without the patch prints every status at the end: its run lasts the longest warm-up, the window and the spare, and
the instants are placed back from its printing.

Seconds are counted in the I/O time of the job that started last (``status.elapsed_ms``), so every job has warmed up
as long as asked, and the window is a time when all run.

Statuses come every ``interval_s`` seconds (the plan's ``method.interval``): the warm-up is judged, and the window
placed, to the nearest status. Each interval of the window is also reported as a merged ``intervals.Interval``: a
direct run hands each to ``on_interval`` the moment its status is written (so a long run's series is on disk up to its
last interval whatever stops it); a client run's come after the run, all at once. A long direct run keeps the
histograms of its window's first and latest statuses only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ..errors import ToolError
from ..plan.expand import Cell
from ..plan.verify import Verification
from ..safepath import inside
from ..trust import make_dir
from .fio import Fio
from .intervals import Interval, interval, light, window_intervals
from .jobfile import render_streams
from .measure import HostRun, client_plan
from .replay import replay_files
from .status import (
    TOLERANCE_MS,
    Snapshot,
    StatusFile,
    documents,
    elapsed_ms,
    iops_series,
    snapshots,
    total_series,
    window_document,
)
from .streamed import Ahead, Streamed

#: fio's runtime beyond the longest warm-up and the window, so that the window's end status exists even when the
#: jobs started that much apart (each job's runtime counts from its own start). A direct run is stopped at the
#: window's end, so its spare costs nothing; so is a streamed client run (a client without fio patch 0004
#: lasts it all).
SPARE_DIRECT_S = 10.0
SPARE_CLIENT_S = 3.0


@dataclass
class WindowRun:
    """What one fio run measured: the window's document, the per-second series, the warm-up's end."""

    output: Path  # fio's own output: every status document, untouched
    window_doc: dict[str, Any]  # the window, in fio's shape (parse.parse_fio_json reads it)
    series: list[float]  # IOPS per second of the window, all hosts
    series_by_host: dict[str, list[float]]  # fio source ('local', 'HOST:PORT') → IOPS per second
    warmup_series: list[float]  # IOPS per second of the warm-up, all hosts
    warmup_s: float  # the jobs' runtime when the warm-up ended
    window_s: float  # the jobs' runtime between the two boundaries
    before: Any = None  # telemetry sampled at the warm-up's end
    after: Any = None  # … and at the window's end
    live: bool = True  # False: a client run, boundaries placed afterwards
    op_errors: list[str] = field(default_factory=list)
    #: the largest difference between the window and one fio's own I/O time between its boundary statuses: a
    #: client run's servers whose statuses fell out of step (a status timer that skipped a beat) make it large
    out_of_step_s: float = 0.0
    intervals: list[Interval] = field(default_factory=list)  # the window's, merged over jobs and hosts
    streamed: bool = False  # True: each interval went to on_interval as its status was written
    #: ``keep_failed``: fio's own failure that ended the run before the window's end (a faulted window whose
    #: initiator gave up: the window is what it measured until then)
    ended_by_error: str | None = None
    verify_lines: list[str] = field(default_factory=list)  # a direct run's lines for blocks that failed a check


@dataclass
class _Live:
    """The state of a direct run while its documents come in."""

    duration_ms: float
    warmup_done: Callable[[list[float], float], bool]
    sample: Callable[[], Any]
    on_warmup_end: Callable[[], None]
    interval_s: int = 1
    on_interval: Callable[[Interval], None] | None = None
    snaps: list[Snapshot] = field(default_factory=list)
    start: int | None = None  # index of the warm-up's last snapshot (-1: no warm-up)
    end: int | None = None
    before: Any = None
    after: Any = None
    intervals: list[Interval] = field(default_factory=list)
    _from: int | None = None  # the status the next interval starts at (None: the window's first)

    def __call__(self, doc: dict) -> bool:
        got = snapshots([doc]).get("local")
        if not got:
            return False
        if self.snaps and (got[0].runtime_ms, got[0].ios) == (self.snaps[-1].runtime_ms, self.snaps[-1].ios) \
                and got[0].runtime_ms:
            return False  # the same status twice (as status.snapshots drops)
        self.snaps.append(got[0])
        i = len(self.snaps) - 1
        per = {"local": self.snaps}
        if self.start is None:
            if i >= 1:  # a warm-up status is only counted (IOPS, I/O time): its histograms are not needed
                self.snaps[i - 1] = light(self.snaps[i - 1])
            if self.warmup_done(iops_series(self.snaps), elapsed_ms(per, i) / 1000.0):
                self.before, self.start = self.sample(), i
                self.on_warmup_end()
            return False
        self._interval(i)
        if elapsed_ms(per, i) - elapsed_ms(per, self.start) >= self.duration_ms - TOLERANCE_MS * self.interval_s:
            self.after, self.end = self.sample(), i
            return True  # stop fio: the window is complete
        return False

    def _interval(self, i: int) -> None:
        """Report the interval that status ``i`` ends, then drop the histograms no later interval needs.

        A status whose jobs' I/O time has not moved since the last interval's (a busy machine runs fio's
        status thread before the jobs update their time) ends no interval: the next one spans both."""
        if self._from is None:
            self._from = self.start
        prev = self.snaps[self._from] if self._from >= 0 else None
        if self.snaps[i].runtime_ms <= (prev.runtime_ms if prev else 0.0):
            return
        # it ends where the jobs' I/O time has got to since the window's start: statuses are not always an
        # interval apart (fio 3.33 answers a status only when every job has; a job in a think time or a
        # burst's pause answers when it wakes: statuses about 3 s apart with --status-interval=1)
        # (the window's own clock: status.elapsed_ms, the I/O time of the job that started last)
        iv = interval([(prev, self.snaps[i])],
                      (elapsed_ms({"": self.snaps}, i) - elapsed_ms({"": self.snaps}, self.start)) / 1000.0)
        self.intervals.append(iv)
        if self.on_interval is not None:
            self.on_interval(iv)
        if self._from >= 0 and self._from != self.start:  # the window's first status stays whole: the window needs it
            self.snaps[self._from] = light(self.snaps[self._from])
        self._from = i


def boundaries(per: dict[str, list[Snapshot]], warmup_done: Callable[[list[float], float], bool],
               duration_s: float, start: int | None = None, interval_s: int = 1) -> tuple[int, int]:
    """(index of the warm-up's last status, -1 for none; index of the window's last status), placed afterwards
    by the same rule a direct run applies as the statuses come (``start``: already known)."""
    n = max((len(v) for v in per.values()), default=0)
    total = total_series({s: iops_series(v) for s, v in per.items()})
    if start is None:
        start = next((i for i in range(n) if warmup_done(total[:i + 1], elapsed_ms(per, i) / 1000.0)), n - 1)
    t0 = elapsed_ms(per, start)
    enough = duration_s * 1000.0 - TOLERANCE_MS * interval_s
    end = next((i for i in range(start + 1, n) if elapsed_ms(per, i) - t0 >= enough),
               n - 1)
    return start, end


def run_window(
    fio: Fio,
    cell: Cell,
    hosts: list[HostRun],
    *,
    warmup_max_s: float,
    duration_s: float,
    warmup_done: Callable[[list[float], float], bool],
    sample: Callable[[], Any],
    tick: Callable[[], Any],
    interpolate: Callable[[Any, Any, float], Any],
    folder: Path,
    tag: str,
    label: str,
    timeout_margin_s: float,
    extra: dict | None = None,
    on_iops: Callable[[float], None] | None = None,
    on_warmup_end: Callable[[], None] = lambda: None,
    socket_dir: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[Any], tuple[float, float] | None] = lambda sample: None,
    interval_s: int = 1,
    on_interval: Callable[[Interval], None] | None = None,
    keep_failed: bool = False,
    verify: Verification | None = None,
    on_poll: Callable[[], None] | None = None,
    on_document: Callable[[dict], None] | None = None,
) -> WindowRun:
    """Warm up until ``warmup_done(series, seconds)`` (True at once with no warm-up; then ``on_warmup_end``), measure
    ``duration_s`` s, in one fio run of ``cell`` on ``hosts``; a direct run's intervals to ``on_interval`` at once;
    ``verify``: writes checksummed, read back; ``on_document``: each status; ``on_poll``: a direct run's polls."""
    make_dir(folder)
    name = f"{cell.id}.{tag}"
    output = inside(folder, f"{name}.json")
    direct = len(hosts) == 1 and hosts[0].agent is None
    runtime = warmup_max_s + duration_s + max(SPARE_DIRECT_S if direct else SPARE_CLIENT_S, 2.0 * interval_s)
    jobs = []
    for h in hosts:
        job = inside(folder, f"{name}.{h.name}.fio")
        iologs = replay_files(cell, h.streams, folder, f"{name}.{h.name}") if cell.workload.replay else None
        job.write_text(render_streams(cell, h.streams, runtime=runtime, extra=extra, iologs=iologs,
                                      verify=verify))
        jobs.append(job)
    timeout = runtime + timeout_margin_s
    live = _Live(duration_s * 1000.0, warmup_done, sample, on_warmup_end, interval_s, on_interval)
    if warmup_done([], 0.0):  # no warm-up: the window starts with the jobs
        live.before, live.start = sample(), -1
        on_warmup_end()
    if direct:
        ended = None
        try:
            fio.run_job(jobs[0], output, netns=hosts[0].netns, on_iops=on_iops, timeout=timeout, label=label,
                        on_status=_tee(live, on_document), status_interval_s=interval_s, on_poll=on_poll)
        except ToolError as e:  # a faulted window: fio giving up is the fault's outcome, once the window started
            if not keep_failed or live.start is None:
                raise
            ended = str(e)
        run = _direct(output, live, fio)
        run.ended_by_error = ended
        return run
    return _client(fio, hosts, jobs, output, live, warmup_done, duration_s, tick, interpolate, socket_dir,
                   timeout, label, clock, progress, on_iops, on_document)


def _tee(on_status: Callable[[dict], bool], also: Callable[[dict], None] | None) -> Callable[[dict], bool]:
    """``on_status``, and ``also`` shown each document first."""
    return on_status if also is None else lambda doc: (also(doc), on_status(doc))[1]


def _direct(output: Path, live: _Live, fio: Fio) -> WindowRun:
    if live.end is not None and live.start is not None:  # the window is complete: the live statuses have it all
        run = _result(output, {"local": live.snaps}, live.start, live.end, live.before, live.after, True, fio,
                      live.interval_s, list(live.intervals))
        run.streamed = True
        return run
    snaps = snapshots(documents(output.read_text())).get("local", [])
    if not snaps:
        raise ToolError(f"fio wrote no status to {output}")
    if live.start is None:  # fio ended before the warm-up did: the last snapshot ends it
        live.start, live.before = len(snaps) - 1, live.sample()
    if live.end is None:  # fio ended (an error, a short run) before the window's end snapshot
        live.end, live.after = len(snaps) - 1, live.sample()
    run = _result(output, {"local": snaps}, live.start, live.end, live.before, live.after, True, fio, live.interval_s)
    # fio ended first: the intervals not yet reported (its last statuses) are reported now, in order
    for iv in run.intervals[len(live.intervals):]:
        if live.on_interval is not None:
            live.on_interval(iv)
    run.streamed = True
    return run


def _client(fio: Fio, hosts, jobs, output: Path, live: _Live, warmup_done, duration_s: float, tick, interpolate,
            socket_dir, timeout: float, label: str, clock, progress=lambda sample: None,
            on_iops: Callable[[float], None] | None = None,
            on_document: Callable[[dict], None] | None = None) -> WindowRun:
    ticks: list[tuple[float, Any]] = [(clock(), tick())]
    printed = _PrintWatch(output, clock)

    def poll() -> None:
        printed.check()
        if clock() - ticks[-1][0] >= 1.0:
            ticks.append((clock(), tick()))

    clients, netns = client_plan(hosts, jobs)
    # each server's status as it comes: the run stops at the window's end, not at its runtime's (fio patch 0004)
    stream = Streamed(len(clients), duration_s * 1000.0, warmup_done, clock, live.interval_s,  # told the warm-up's
                      start=-1 if live.start == -1 else None, on_iops=on_iops, on_start=live.on_warmup_end)  # end
    # the statuses are parsed once, as they come (and on after the stop, while fio ends its jobs), not read again
    statuses = StatusFile(output, keep=True)
    ahead = Ahead(lambda per, s, e: _result(output, per, s, e, None, None, False, None, live.interval_s))

    def on_status(doc: dict) -> bool:
        if not stream(doc):
            return False
        ahead.start(list(statuses.kept), stream.start, stream.end)  # type: ignore[arg-type]
        return True

    fio.run_clients(clients, output, cwd=socket_dir, timeout=timeout, label=label, status_interval=live.interval_s,
                    on_poll=poll, on_status=_tee(on_status, on_document), statuses=statuses,
                    **({"netns": netns} if netns else {}))
    exited = clock()
    ticks.append((exited, tick()))
    per = snapshots(statuses.finish())
    if not per:
        raise ToolError(f"{label}: fio's client reported no status; see {output}")
    start, end = boundaries(per, warmup_done, duration_s, start=-1 if live.start == -1 else None,
                            interval_s=live.interval_s)
    # a streamed client prints its first status at once: its statuses' ends are known when it exits
    ended = printed.at if printed.at is not None and not stream.streamed else exited

    def at(i: int) -> float:
        """Status i's instant on our clock, the earlier of two bounds. The client's last status comes once
        every job has ended (a client without patch 0004 then starts printing), so status i came no later than
        that less any job's I/O time from status i to its end (a job not started yet at i: all of it): late by
        the time the client takes to build its document (large with many jobs). A streamed status came no
        later than it reached us: late by as long as its server took to send it (seconds, with 160 busy jobs
        on 2 cores). The other way, i + 1 s after the client started (each server's status timer starts when
        it gets its jobs), is early by as much as a slow server takes to start them: a TCG guest's, by a
        second."""
        by_end = ended - max(end - now for v in per.values()
                             for end, now in zip(v[-1].job_runtimes_ms, v[min(i, len(v) - 1)].job_runtimes_ms)) / 1000.0
        return min(by_end, stream.at(i, exited)) if stream.streamed else by_end

    sample_at = _by_traffic(per, ticks, progress, interpolate) or (lambda i: _read(ticks, at(i), interpolate))
    before = live.before if start == -1 else sample_at(start)
    after = sample_at(end)
    if stream.start in (None, -1):  # not told as it came (no warm-up; a client that does not stream): told now
        live.on_warmup_end()
    early = ahead.result(per, start, end)
    if early is not None:
        return replace(early, before=before, after=after, op_errors=list(getattr(fio, "op_errors", [])))
    return _result(output, per, start, end, before, after, False, fio, live.interval_s)


def _by_traffic(per: dict[str, list[Snapshot]], ticks: list[tuple[float, Any]],
                progress: Callable[[Any], tuple[float, float] | None], interpolate) -> Callable[[int], Any] | None:
    """The telemetry at status i, read where the storage traffic we counted reached the share of the run's I/Os
    that fio had done by status i (every I/O of one workload moves about the same bytes).

    This needs no clock of fio's: a busy machine delayed fio's client print by 7 s after the last I/O (160
    jobs' results to gather), which placed a window after the traffic had ended (0 bytes per I/O). None
    when there is no traffic to go by (no lab interfaces, or none counted). ``progress`` gives a sample's
    instant and bytes; the instant is the one ``interpolate`` reads the sample at."""
    marks = [progress(s) for _, s in ticks]
    ios_end = sum(v[-1].ios for v in per.values())
    if any(m is None for m in marks) or ios_end <= 0 or marks[-1][1] <= marks[0][1]:  # type: ignore[index]
        return None
    b0, b1 = marks[0][1], marks[-1][1]  # type: ignore[index]

    def sample_at(i: int) -> Any:
        share = sum(v[min(i, len(v) - 1)].ios for v in per.values()) / ios_end
        target = b0 + share * (b1 - b0)
        for k, ((ta, ba), (tb, bb)) in enumerate(zip(marks, marks[1:])):  # type: ignore[misc]
            if bb >= target and bb > ba:
                return interpolate(ticks[k][1], ticks[k + 1][1], ta + (target - ba) / (bb - ba) * (tb - ta))
        return ticks[-1][1]

    return sample_at


class _PrintWatch:
    """When fio's client starts printing its JSON document (a '{' opening a line of its output file)."""

    def __init__(self, output: Path, clock: Callable[[], float]):
        self.output, self.clock, self.pos, self.last, self.at = output, clock, 0, "\n", None

    def check(self) -> None:
        if self.at is not None or not self.output.exists():
            return
        with self.output.open() as f:
            f.seek(self.pos)
            chunk = f.read()
            self.pos = f.tell()
        if chunk and "\n{" in self.last + chunk:
            self.at = self.clock()
        self.last = chunk[-1:] or self.last


def _read(ticks: list[tuple[float, Any]], t: float, interpolate) -> Any:
    """Telemetry at instant ``t``, interpolated between the two ticks around it."""
    after = next((i for i, (tt, _) in enumerate(ticks) if tt >= t), len(ticks) - 1)
    lo, hi = ticks[max(0, after - 1)], ticks[after]
    return interpolate(lo[1], hi[1], t) if lo is not hi else hi[1]


def _result(output: Path, per: dict[str, list[Snapshot]], start: int, end: int, before, after, live: bool,
            fio: Fio | None, interval_s: int = 1, intervals: list[Interval] | None = None) -> WindowRun:
    pairs, series_by, warm_by = [], {}, {}
    for src, snaps in per.items():
        # the k-th status of every fio comes at about the same time (see status.total_series)
        e = min(end, len(snaps) - 1)
        s = min(start, e - 1) if start >= 0 else -1
        pairs.append((snaps[s] if s >= 0 else None, snaps[e]))
        series = iops_series(snaps[:e + 1])
        warm_by[src] = series[:s + 1]
        series_by[src] = series[s + 1:]
    t0 = elapsed_ms(per, start)
    window_ms = elapsed_ms(per, end) - t0
    step = max((abs(min(e.job_runtimes_ms) - (min(a.job_runtimes_ms) if a else 0.0) - window_ms)
                for a, e in pairs if e.jobs), default=0.0)
    return WindowRun(
        output=output, window_doc=window_document(pairs, client=not live),
        series=total_series(series_by), series_by_host=series_by, warmup_series=total_series(warm_by),
        warmup_s=t0 / 1000.0, window_s=(elapsed_ms(per, end) - t0) / 1000.0,
        before=before, after=after, live=live, op_errors=list(getattr(fio, "op_errors", [])),
        verify_lines=list(getattr(fio, "verify_lines", [])),
        out_of_step_s=step / 1000.0,
        intervals=intervals if intervals is not None else window_intervals(per, start, end, interval_s),
    )
