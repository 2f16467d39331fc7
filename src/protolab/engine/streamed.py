"""A client run's statuses as they come: when every server has sent the window's end status, stop.

fio's client prints its servers' statuses only when the run ends, so a client run used to last its whole
runtime: the longest warm-up, the window and the spare kept for jobs that start apart. protolab's fio patch
0004 (FIO_CLIENT_STREAM) has the client print each server's status the moment it comes, a document of its own.
``Streamed`` reads them as ``Fio.run_clients`` passes them on, places the warm-up's end and the window's end by
the rule ``window.boundaries`` applies afterwards (the same statuses give the same indices), and says stop at the
status that ends the window on every server; it also notes when each status came, on the caller's clock, which
is where the telemetry is read. A client without the patch prints one document at the end: ``Streamed`` then
never stops the run and knows no instants (``streamed`` False). ``Ahead`` works the window's figures out
while the stopped fio ends its jobs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from .intervals import light
from .status import TOLERANCE_MS, Snapshot, elapsed_ms, iops_series, snapshots, total_series

T = TypeVar("T")


@dataclass
class Streamed:
    """The statuses of ``servers`` fio servers so far; called with each document the client prints."""

    servers: int
    duration_ms: float
    warmup_done: Callable[[list[float], float], bool]
    clock: Callable[[], float]
    interval_s: int = 1
    start: int | None = None  # the warm-up's last status (-1: no warm-up), once every server has sent it
    end: int | None = None
    per: dict[str, list[Snapshot]] = field(default_factory=dict)
    came: dict[str, list[float]] = field(default_factory=dict)  # per server, when each of its statuses came
    whole: bool = False  # a document held several statuses of one server: the client does not stream
    on_iops: Callable[[float], None] | None = None  # each status's IOPS, all servers (the progress bar's)
    on_start: Callable[[], None] | None = None  # the warm-up ended (every server's status says so), as it happens
    _judged: int = 0  # statuses judged so far (every server has sent them)

    @property
    def streamed(self) -> bool:
        return bool(self.came) and not self.whole

    def __call__(self, doc: dict) -> bool:
        got = snapshots([doc])
        if any(len(v) > 1 for v in got.values()):
            self.whole = True
        if self.whole or self.end is not None:
            return False
        now = self.clock()
        for src, snaps in got.items():
            mine = self.per.setdefault(src, [])
            for s in snaps:
                if mine and s.runtime_ms and (s.runtime_ms, s.ios) == (mine[-1].runtime_ms, mine[-1].ios):
                    continue  # the same status twice (as status.snapshots drops)
                mine.append(light(s))  # I/Os and I/O time are all it judges by: no histograms kept twice
                self.came.setdefault(src, []).append(now)
        if len(self.per) < self.servers:
            return False
        ready = min(len(v) for v in self.per.values())
        while self._judged < ready:
            i, self._judged = self._judged, self._judged + 1
            if self.on_iops is not None:  # the interval status i ends, every server's
                self.on_iops(sum(iops_series(v[max(0, i - 1):i + 1])[-1] for v in self.per.values()))
            if self.start is None:
                total = total_series({s: iops_series(v[:i + 1]) for s, v in self.per.items()})
                if self.warmup_done(total, elapsed_ms(self.per, i) / 1000.0):
                    self.start = i
                    if self.on_start is not None:  # a fault's schedule starts with the window (run.fault_schedule)
                        self.on_start()
                continue
            if elapsed_ms(self.per, i) - elapsed_ms(self.per, self.start) \
                    >= self.duration_ms - TOLERANCE_MS * self.interval_s:
                self.end = i
                return True
        return False

    def at(self, i: int, otherwise: float) -> float:
        """When status ``i`` had come from every server (``otherwise``: for one that came after the stop)."""
        return max(v[i] if i < len(v) else otherwise for v in self.came.values())


class Ahead(Generic[T]):
    """The window's figures worked out on a thread of its own while fio ends its jobs.

    Once every server has sent the window's end status, fio is stopped and takes a second or more to end 160 jobs
    and send their last statuses; every figure of the window (not its telemetry) comes from the statuses up to its
    end, which are known by then. ``start`` works them out from the documents so far; ``result``, once fio has
    exited, gives them only if the run's statuses, read whole, place the same window on the same statuses
    (None otherwise, or when it failed: the caller works them out again)."""

    def __init__(self, compute: Callable[[dict[str, list[Snapshot]], int, int], T]):
        self.compute = compute
        self.thread: threading.Thread | None = None
        self.got: tuple[int, int, dict[str, list[Snapshot]], T] | None = None

    def start(self, docs: list[dict], start: int, end: int) -> None:
        self.thread = threading.Thread(target=self._run, args=(docs, start, end), name="protolab-window-ahead",
                                       daemon=True)
        self.thread.start()

    def _run(self, docs: list[dict], start: int, end: int) -> None:
        try:
            per = snapshots(docs)
            if per and all(len(v) > end for v in per.values()):
                self.got = (start, end, per, self.compute(per, start, end))
        except Exception:  # noqa: BLE001 — worked out again on the caller's thread, where an error is raised
            self.got = None

    def result(self, per: dict[str, list[Snapshot]], start: int, end: int) -> T | None:
        """What ``start`` worked out, if ``per`` (every status of the run) agrees with what it was worked out from."""
        if self.thread is None:
            return None
        self.thread.join()
        if self.got is None:
            return None
        s, e, early, done = self.got
        if (s, e) != (start, end) or list(early) != list(per) or any(
                per[src][:end + 1] != early[src][:end + 1] for src in per):
            return None
        return done
