"""method.breakdown's sampled capture of one window (plan.breakdown): tcpdump at the load host's storage port and at
the server's port for a sub-window, started and stopped from a thread of its own while fio runs — on the clock the
faults use (run.fault_schedule: ``start()`` at the warm-up's end, ``stop()`` in the procedure's ``finally``) — then
tshark's request→reply times at each point (telemetry.capture) and the window's IOPS inside and outside the
sub-window (what the capture cost), as the record's ``ServiceTimes``.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import ToolError
from ..plan.breakdown import sub_window
from ..plan.expand import Cell
from ..plan.model import Plan
from ..plan.protocols import Dissector
from ..results.records import DeviceTime, ServicePoint, ServiceTimes
from ..safepath import inside
from ..telemetry.capture import Capture, Times, common_span, mean_within
from ..telemetry.devicetime import DeviceCounters, between
from ..trust import make_dir

#: The share of an interval the capture covers for it to count as captured (and at most 1 − it, as uncaptured).
CAPTURED = 0.9


@dataclass
class SampledCapture:
    """The captures of one window: each ``(role, Capture)`` from ``start_s`` for ``seconds`` after ``start()``."""

    protocol: str
    dissector: Dissector
    captures: list[tuple[str, Capture]]
    start_s: float
    seconds: float
    clock: Callable[[], float] = time.monotonic
    wait: Callable[[threading.Event, float], bool] = lambda event, seconds: event.wait(seconds)
    t0: float | None = None
    span: list[float] = field(default_factory=list)  # when the captures started and stopped, s into the window
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    device: Callable[[], DeviceCounters] | None = None  # the device model's counters (read as the captures start, stop)
    _device: list[DeviceCounters | None] = field(default_factory=list)

    def start(self) -> None:
        """The measured window starts now: capture from a thread."""
        if self.t0 is not None:
            return
        self.t0 = self.clock()
        self._thread = threading.Thread(target=self.run, name="capture", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Start the captures at ``start_s``, stop them ``seconds`` later (or when the window ends first)."""
        assert self.t0 is not None
        left = self.start_s - (self.clock() - self.t0)
        if (left > 0 and self.wait(self._stop, left)) or self._stop.is_set():
            return  # the window ended before the sub-window began: nothing captured
        with self._lock:
            self.span.append(self.clock() - self.t0)
            for _, c in self.captures:
                c.start()
            self._device.append(self._read())
        self.wait(self._stop, self.seconds)
        self._end()

    def _end(self) -> None:
        with self._lock:
            if len(self.span) == 1:
                for _, c in self.captures:  # all at once, then each waited for: they stop together
                    c.interrupt()
                for _, c in self.captures:
                    c.stop()
                self._device.append(self._read())
                self.span.append(self.clock() - self.t0)

    def _read(self) -> DeviceCounters | None:
        try:
            return self.device() if self.device is not None else None
        except OSError:  # the daemon did not answer: the capture has no device time
            return None

    def stop(self) -> None:
        """The window ended: stop what still runs (called in a ``finally``: no tcpdump outlives the window)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60.0)
        if self.t0 is not None:
            self._end()

    def result(self, intervals: list) -> ServiceTimes:
        """tshark's times at each point over the span every capture ran, and the window's IOPS inside and outside
        the capture."""
        start, end = self.span if len(self.span) == 2 else (self.start_s, self.start_s)
        inside_iops, outside_iops = capture_cost(intervals, start, end)
        captured_lat = captured_latency(intervals, start, end)
        counted = between(*self._device) if len(self._device) == 2 else None

        def dissect(c: Capture) -> tuple[list[tuple[float, float]], str | None]:
            try:
                return (c.replies(self.dissector) if c.counts is not None else []), None
            except ToolError as e:
                return [], f"tshark: {e}"[:300]

        with ThreadPoolExecutor(max_workers=len(self.captures) or 1) as pool:  # one tshark per point at once
            done = list(pool.map(dissect, [c for _, c in self.captures]))
        lo, hi = common_span([r for r, _ in done])
        return ServiceTimes(protocol=self.protocol, start_s=round(start, 3), seconds=round(end - start, 3),
                            points=[point(role, c, self.dissector, mean_within(r, lo, hi), n)
                                    for (role, c), (r, n) in zip(self.captures, done)],
                            iops_captured=inside_iops, iops_uncaptured=outside_iops, lat_captured_us=captured_lat,
                            device=device_time(counted))


def device_time(counted: DeviceCounters | None) -> DeviceTime | None:
    """The device model's time per request over the capture's span (as run.recording's over the window)."""
    if counted is None:
        return None
    reads, writes = round(counted.reads), round(counted.writes)
    return DeviceTime(requests=reads + writes, reads=reads, writes=writes, queue_us=round(counted.mean_queue_us(), 3),
                      service_us=round(counted.mean_service_us(), 3))


def point(role: str, c: Capture, dissector: Dissector, times: Times, failed: str | None = None) -> ServicePoint:
    """One capture point's request→reply time, or why it has none."""
    where = f"{c.netns}/{c.ifname}"
    if c.counts is None:
        return ServicePoint(point=where, role=role, note=c.error or "not captured: the window ended before the capture")
    note = (f"tcpdump dropped {c.counts.dropped} frame(s): requests or replies the mean misses"
            if c.counts.dropped else None)
    if failed is not None:
        note = failed
    elif times.pairs == 0:
        note = (f"tshark's dissector matched no reply ({dissector.time_field}) among {c.counts.captured} frames"
                + ("; " + note if note else ""))
    return ServicePoint(point=where, role=role, srt_us=times.mean_us, pairs=times.pairs, frames=c.counts.captured,
                        dropped=c.counts.dropped, note=note)


def capture_cost(intervals: list, start: float, end: float) -> tuple[float | None, float | None]:
    """The mean IOPS of the window's intervals inside [start, end] (at least CAPTURED of each), and of those outside
    it (at most 1 − CAPTURED inside; an interval spans ``t_s - seconds`` to ``t_s``; one the capture's start or end
    cuts further counts in neither)."""
    ins, outs = _split(intervals, start, end)

    def mean(ivs: list) -> float | None:
        seconds = sum(iv.seconds for iv in ivs)
        return round(sum(iv.iops * iv.seconds for iv in ivs) / seconds, 1) if seconds > 0 else None

    return mean(ins), mean(outs)


def _split(intervals: list, start: float, end: float) -> tuple[list, list]:
    """The intervals inside [start, end] and those outside it (see `capture_cost`)."""
    ins, outs = [], []
    for iv in intervals:
        a, b = iv.t_s - iv.seconds, iv.t_s
        overlap = max(0.0, min(b, end) - max(a, start))
        if overlap >= CAPTURED * iv.seconds:  # the capture and fio's statuses keep their times within tens of ms
            ins.append(iv)
        elif overlap <= (1.0 - CAPTURED) * iv.seconds:
            outs.append(iv)
    return ins, outs


def captured_latency(intervals: list, start: float, end: float) -> float | None:
    """fio's mean completion latency over the intervals inside [start, end] (as `capture_cost` counts them), each
    weighted by its I/Os: the top the capture's request→reply times are a part of (analysis.time_breakdown)."""
    got = [(iv.lat_mean_us, iv.ios) for iv in _split(intervals, start, end)[0] if iv.lat_mean_us is not None
           and iv.ios > 0]
    ios = sum(n for _, n in got)
    return round(sum(v * n for v, n in got) / ios, 3) if ios else None


def sampled_capture(plan: Plan, cell: Cell, testbed, run_path: Path, duration: float) -> SampledCapture | None:
    """The capture of this window, when the plan asks for one (method.breakdown) and the window is its cell's last
    repeat (with adaptive repeats: the last of the ``min`` every cell gets) on a path the testbed can capture."""
    if not plan.method.breakdown or cell.repeat != plan.method.min_repeats:
        return None
    where = testbed.capture_points(cell.configuration)
    if where is None:
        return None
    protocol, dissector, points = where
    folder = make_dir(run_path / "captures")
    captures = []
    for role, netns, ifname in points:
        name = f"{cell.id}-{role}.pcap"
        if os.path.lexists(folder / name):  # a window measured again (resume): its capture anew
            os.unlink(folder / name)  # the name itself goes (a link is removed, never followed)
        inside(folder, name)  # one plain file name in captures/ (telemetry.capture opens it new, without links)
        captures.append((role, Capture(testbed.runner, netns, ifname, dissector.port, folder, name)))
    start, seconds = sub_window(duration)
    stats = getattr(testbed, "device_stats", None)
    return SampledCapture(protocol, dissector, captures, start, seconds, device=stats() if stats else None)
