"""The device model's own time per request (issue 46): its daemon's cumulative counters, sampled with the window's
other counters at the measured window's boundaries (a client run's interpolated between two samples, as theirs are).

The daemon (lab/blockdev/protolab-blockdev.c) counts every request it answers — reads, writes, and the sums of their
queue (arrival → service start) and service (service start → answer) nanoseconds — since it started; the lab's
handle (lab.device.BlockDevice.stats) reads them through user.protolab.stats. A window's device time is the
difference of two readings; the run turns it into the record's DeviceTime (run.recording).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

from .source import Fields, lerp


@dataclass(frozen=True)
class DeviceCounters:
    """The daemon's counters: requests answered by kind, and the nanoseconds they queued and were served, summed
    (cumulative at one instant, or the difference between two: see ``minus``). Floats: an interpolated reading
    lies between two whole ones."""

    reads: float = 0.0
    writes: float = 0.0
    queue_ns: float = 0.0
    service_ns: float = 0.0

    @property
    def requests(self) -> float:
        """Requests answered, reads and writes."""
        return self.reads + self.writes

    def minus(self, before: DeviceCounters) -> DeviceCounters:
        """What was counted since ``before`` (an earlier reading of the same daemon)."""
        return DeviceCounters(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))

    def at(self, later: DeviceCounters, f: float) -> DeviceCounters:
        """The counters a fraction ``f`` of the way from this reading to ``later``."""
        return DeviceCounters(*(lerp(getattr(self, k.name), getattr(later, k.name), f) for k in fields(self)))

    def mean_queue_us(self) -> float:
        """Mean queue time per request, µs (0 without requests)."""
        return self.queue_ns / self.requests / 1000 if self.requests > 0 else 0.0

    def mean_service_us(self) -> float:
        """Mean service time per request, µs (0 without requests)."""
        return self.service_ns / self.requests / 1000 if self.requests > 0 else 0.0


def between(before: DeviceCounters | None, after: DeviceCounters | None) -> DeviceCounters | None:
    """What the device model counted between two readings; None when either could not be read, or when the counters
    went back (another daemon: the device model was started again between them)."""
    if before is None or after is None:
        return None
    d = after.minus(before)
    return d if min(d.reads, d.writes, d.queue_ns, d.service_ns) >= 0 else None


@dataclass
class DeviceStats:
    """A window's source of the device model's counters (telemetry.source.Source). It gives no Telemetry field:
    the window's device time is a record of its own (Window.device, run.recording)."""

    read: Callable[[], DeviceCounters]
    name: str = "device"
    instant: bool = True  # a getxattr: read in the sample's instant, with the counters the window is made of

    def start(self) -> None:
        """Nothing is read once per window."""

    def sample(self) -> DeviceCounters | None:
        """The daemon's counters now; None when it does not answer (a daemon built before its counters: make deps
        rebuilds it) — the window goes on, its record without a device time."""
        try:
            return self.read()
        except OSError:
            return None

    def interpolate(self, a: DeviceCounters | None, b: DeviceCounters | None, f: float) -> DeviceCounters | None:
        """The counters a fraction ``f`` of the way from ``a`` to ``b`` (None: either missing)."""
        return None if a is None or b is None else a.at(b, f)

    def delta(self, before: DeviceCounters | None, after: DeviceCounters | None) -> Fields:
        """No Telemetry field (see the class)."""
        return {}
