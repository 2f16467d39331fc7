"""A client run's statuses as they come: when every server has sent the window's end status, stop.

fio's client prints its servers' statuses only when the run ends, so a client run used to last its whole
runtime: the longest warm-up, the window and the spare kept for jobs that start apart. protolab's fio patch
0004 (FIO_CLIENT_STREAM) has the client print each server's status the moment it comes, a document of its own.
``Streamed`` reads them as ``Fio.run_clients`` passes them on, places the warm-up's end and the window's end by
the rule ``window.boundaries`` applies afterwards (the same statuses give the same indices), and says stop at the
status that ends the window on every server; it also notes when each status came, on the caller's clock, which
is where the telemetry is read. A client without the patch prints one document at the end: ``Streamed`` then
never stops the run and knows no instants (``streamed`` False).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .intervals import light
from .status import TOLERANCE_MS, Snapshot, elapsed_ms, iops_series, snapshots, total_series


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
                continue
            if elapsed_ms(self.per, i) - elapsed_ms(self.per, self.start) \
                    >= self.duration_ms - TOLERANCE_MS * self.interval_s:
                self.end = i
                return True
        return False

    def at(self, i: int, otherwise: float) -> float:
        """When status ``i`` had come from every server (``otherwise``: for one that came after the stop)."""
        return max(v[i] if i < len(v) else otherwise for v in self.came.values())
