"""One fio run per cell and repeat: the warm-up, then the measured window, in the same jobs.

fio runs once with ``--status-interval=1``: every second it reports every job's
cumulative counters (see ``engine.status``). The warm-up ends at the first
snapshot where ``warmup_done(iops_series, seconds)`` says so; the measured window
is the ``duration`` seconds of snapshots after it, and its figures are the end
snapshot minus the start snapshot. The connections, logins and caches the window
measures are those the warm-up warmed.

Telemetry must cover the window only. A direct run's documents are read as fio
writes them, so ``sample()`` is called at the very moment each boundary snapshot
appears, and fio is stopped right after the window's end. fio's client prints its
servers' documents only when the run ends, so a client run lasts the longest
warm-up plus the window, ``tick()`` is sampled every second meanwhile, the
boundaries are placed afterwards, and ``interpolate`` reads the telemetry at the
boundaries' instants, estimated from the client's exit (which follows the jobs' end).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..plan.expand import Cell
from ..safepath import inside
from .fio import Fio
from .jobfile import render_streams
from .measure import HostRun
from .status import Snapshot, documents, iops_series, nearest, snapshots, total_series, window_document

#: A boundary snapshot is the one nearest its target: half a status interval either side.
TOLERANCE_MS = 500.0
SPARE_S = 1.0  # fio's runtime beyond the longest warm-up and the window, so the window's end snapshot exists


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


@dataclass
class _Live:
    """The state of a direct run while its documents come in."""

    duration_ms: float
    warmup_done: Callable[[list[float], float], bool]
    sample: Callable[[], Any]
    on_warmup_end: Callable[[], None]
    snaps: list[Snapshot] = field(default_factory=list)
    start: int | None = None  # index of the warm-up's last snapshot (-1: no warm-up)
    end: int | None = None
    before: Any = None
    after: Any = None

    def __call__(self, doc: dict) -> bool:
        got = snapshots([doc]).get("local")
        if not got:
            return False
        self.snaps.append(got[0])
        i = len(self.snaps) - 1
        if self.start is None:
            if self.warmup_done(iops_series(self.snaps), self.snaps[i].runtime_ms / 1000.0):
                self.before, self.start = self.sample(), i
                self.on_warmup_end()
            return False
        start_ms = self.snaps[self.start].runtime_ms if self.start >= 0 else 0.0
        if self.snaps[i].runtime_ms - start_ms >= self.duration_ms - TOLERANCE_MS:
            self.after, self.end = self.sample(), i
            return True  # stop fio: the window is complete
        return False


def boundaries(snaps: list[Snapshot], series: list[float], warmup_done: Callable[[list[float], float], bool],
               duration_s: float) -> tuple[int, int]:
    """(index of the warm-up's last snapshot or -1, index of the window's last snapshot), placed afterwards."""
    start = len(snaps) - 1
    for i in range(len(snaps)):
        if warmup_done(series[:i + 1], snaps[i].runtime_ms / 1000.0):
            start = i
            break
    start_ms = snaps[start].runtime_ms if start >= 0 else 0.0
    end = nearest(snaps, start_ms + duration_s * 1000.0)
    if end <= start:
        end = min(start + 1, len(snaps) - 1)
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
) -> WindowRun:
    """Warm up until ``warmup_done(series, seconds)`` (called at each second; with no warm-up it says True
    at once), then measure ``duration_s`` seconds, in one fio run of ``cell`` on ``hosts``."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{cell.id}.{tag}"
    output = inside(folder, f"{name}.json")
    runtime = warmup_max_s + duration_s + SPARE_S
    jobs = []
    for h in hosts:
        job = inside(folder, f"{name}.{h.name}.fio")
        job.write_text(render_streams(cell, h.streams, runtime=runtime, extra=extra))
        jobs.append(job)
    timeout = runtime + timeout_margin_s
    live = _Live(duration_s * 1000.0, warmup_done, sample, on_warmup_end)
    if warmup_done([], 0.0):  # no warm-up: the window starts with the jobs
        live.before, live.start = sample(), -1
        on_warmup_end()
    if len(hosts) == 1 and hosts[0].agent is None:
        fio.run_job(jobs[0], output, netns=hosts[0].netns, on_iops=on_iops, timeout=timeout, label=label,
                    on_status=live)
        return _direct(output, live, warmup_done, duration_s, fio)
    return _client(fio, hosts, jobs, output, live, warmup_done, duration_s, tick, interpolate, socket_dir,
                   timeout, label, clock)


def _direct(output: Path, live: _Live, warmup_done, duration_s: float, fio: Fio) -> WindowRun:
    snaps = snapshots(documents(output.read_text())).get("local", [])
    if not snaps:
        from ..errors import ToolError

        raise ToolError(f"fio wrote no status to {output}")
    if live.start is None:  # fio ended before the warm-up did: the last snapshot ends it
        live.start, live.before = len(snaps) - 1, live.sample()
    if live.end is None:  # fio ended (an error, a short run) before the window's end snapshot
        live.end, live.after = len(snaps) - 1, live.sample()
    return _result(output, {"local": snaps}, live.start, live.end, live.before, live.after, True, fio)


def _client(fio: Fio, hosts, jobs, output: Path, live: _Live, warmup_done, duration_s: float, tick, interpolate,
            socket_dir, timeout: float, label: str, clock) -> WindowRun:
    ticks: list[tuple[float, Any]] = [(clock(), tick())]

    def poll() -> None:
        if clock() - ticks[-1][0] >= 1.0:
            ticks.append((clock(), tick()))

    clients = [(h.agent.client_arg(), job) for h, job in zip(hosts, jobs)]  # type: ignore[union-attr]
    missing = [h.name for h in hosts if h.agent is None]
    if missing:
        raise ValueError(f"hosts without a fio server in a multi-host cell: {missing}")
    # agents reached over TCP on a namespace's loopback (guests) need the client in that namespace
    where = {getattr(h.agent, "client_netns", None) for h in hosts}
    netns = where.pop() if len(where) == 1 else None
    fio.run_clients(clients, output, cwd=socket_dir, timeout=timeout, label=label, status_interval=True,
                    on_poll=poll, **({"netns": netns} if netns else {}))
    exited = clock()
    ticks.append((exited, tick()))
    per = snapshots(documents(output.read_text()))
    if not per:
        from ..errors import ToolError

        raise ToolError(f"{label}: fio's client reported no status; see {output}")
    total = total_series({s: iops_series(v) for s, v in per.items()})
    first = min(per)  # one server's clock places the boundaries; the others' snapshots are matched by runtime
    start, end = boundaries(per[first], total, warmup_done, duration_s)
    if live.start == -1:
        start = -1
    snaps = per[first]

    def at(i: int) -> float:  # the instant of snapshot i on our clock: the jobs ended just before the exit
        ms = snaps[i].runtime_ms if i >= 0 else 0.0
        return exited - (snaps[-1].runtime_ms - ms) / 1000.0

    before = live.before if start == -1 else _read(ticks, at(start), interpolate)
    after = _read(ticks, at(end), interpolate)
    live.on_warmup_end()
    return _result(output, per, start, end, before, after, False, fio,
                   start_ms=snaps[start].runtime_ms if start >= 0 else 0.0, end_ms=snaps[end].runtime_ms)


def _read(ticks: list[tuple[float, Any]], t: float, interpolate) -> Any:
    """Telemetry at instant ``t``, interpolated between the two ticks around it."""
    after = next((i for i, (tt, _) in enumerate(ticks) if tt >= t), len(ticks) - 1)
    lo, hi = ticks[max(0, after - 1)], ticks[after]
    return interpolate(lo[1], hi[1], t) if lo is not hi else hi[1]


def _result(output: Path, per: dict[str, list[Snapshot]], start: int, end: int, before, after, live: bool,
            fio: Fio, start_ms: float | None = None, end_ms: float | None = None) -> WindowRun:
    pairs, series_by, warm_by = [], {}, {}
    for src, snaps in per.items():
        # each fio's own boundary snapshots: the same index in a direct run, the nearest runtime in a client run
        s = start if live or start < 0 else nearest(snaps, start_ms or 0.0)
        e = end if live else nearest(snaps, end_ms or 0.0)
        s, e = min(s, len(snaps) - 1), min(e, len(snaps) - 1)
        pairs.append((snaps[s] if s >= 0 else None, snaps[e]))
        series = iops_series(snaps[:e + 1])
        warm_by[src] = series[:s + 1]
        series_by[src] = series[s + 1:]
    first = pairs[0]
    return WindowRun(
        output=output, window_doc=window_document(pairs, client=not live),
        series=total_series(series_by), series_by_host=series_by, warmup_series=total_series(warm_by),
        warmup_s=first[0].runtime_ms / 1000.0 if first[0] else 0.0,
        window_s=(first[1].runtime_ms - (first[0].runtime_ms if first[0] else 0.0)) / 1000.0,
        before=before, after=after, live=live, op_errors=list(getattr(fio, "op_errors", [])),
    )
