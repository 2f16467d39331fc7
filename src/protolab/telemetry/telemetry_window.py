"""A telemetry window: its sources (telemetry.source) sampled right before and right after the measured fio run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..proc import Runner
from .cgroups import ROLES, RoleCgroups, RoleCpu, RoleCpuWait
from .cpu import MachineCpu, ServerThreads, ServerTrees, Softirq
from .devicetime import DeviceCounters, DeviceStats, between
from .net import InterfaceTraffic, Offloads, Port
from .priority import CpuPriority, RoleCpuLimit, RoleCpuWeight
from .source import Carries, Fields, Source, lerp


@dataclass(frozen=True)
class Snapshot:
    """Every source's counters at one instant ``t``, in the window's order."""

    t: float
    readings: tuple[tuple[Source[Any], Any], ...]

    def of(self, name: str) -> Any:
        """The counters of the source called ``name`` in this snapshot."""
        return next(v for s, v in self.readings if s.name == name)


@dataclass
class Window:
    """The sources a testbed watches, sampled together; their deltas merged make a window's Telemetry."""

    sources: list[Source[Any]] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    #: the storage servers' processes its server sources watch, by name (shared with them: see `watch_server`)
    server_pids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"telemetry: two sources with one name in {names}")

    @classmethod
    def of(cls, runner: Runner, *, server_pids: dict[str, int] | None = None, interfaces: list[Port] | None = None,
           cgroups: RoleCgroups | None = None, offload_ports: list[Port] | None = None,
           device: Callable[[], DeviceCounters] | None = None,
           clock: Callable[[], float] = time.monotonic, proc: Path = Path("/proc")) -> Window:
        """The machine's CPU and softirq, the storage servers' processes and threads (``server_pids``), the
        interfaces (netns, ifname) and the offload state of ``offload_ports`` (every interface when None), with
        ``cgroups`` each role's CPU, its waits for a CPU, whether its weight held and its CPU limit, and with
        ``device`` (how to read the device model's counters) its time per request."""
        pids, ifaces = dict(server_pids or {}), list(interfaces or [])
        instant: list[Source[Any]] = [MachineCpu(proc), InterfaceTraffic(runner, ifaces, offload_ports),
                                      ServerTrees(pids, proc)]
        detail: list[Source[Any]] = [ServerThreads(pids, proc), Softirq(proc),
                                     Offloads(runner, ifaces if offload_ports is None else offload_ports)]
        if cgroups is not None:
            instant.insert(0, RoleCpu(cgroups))
            detail.insert(0, RoleCpuWait(cgroups))
            if getattr(cgroups, "priority", None) is not None:  # role cgroups without a weight to claim
                detail.append(RoleCpuWeight(cgroups.priority))
            if isinstance(getattr(cgroups, "priority", None), CpuPriority):
                detail.append(RoleCpuLimit(cgroups.priority, ROLES))
        if device is not None:
            instant.append(DeviceStats(device))
        return cls(instant + detail, clock, pids)

    def watch_server(self, name: str, pid: int) -> None:
        """Watch one more storage server process (and its threads) from the next sample on: a server that
        starts after the window was made (the VM testbed's storage server guest, booted on first use)."""
        self.server_pids[name] = pid

    def add(self, source: Source[Any]) -> None:
        """Watch ``source`` too (a testbed's own counters: the VM testbed's QEMU threads)."""
        if any(s.name == source.name for s in self.sources):
            raise ValueError(f"telemetry: a source called {source.name!r} is watched already")
        self.sources.append(source)

    def start(self) -> None:
        """A new measured window begins (its cell's link is set): each source forgets what it read once for the
        last one (a configuration may set other offloads than the last cell's)."""
        for source in self.sources:
            source.start()

    def sample(self) -> Snapshot:
        """Read every source now.

        The counters a window's figures are made of (role and machine CPU, bytes and packets, the servers'
        CPU) are read first, in a few milliseconds, and the sample's instant is the middle of those reads;
        the sources of detail (per-thread CPU, softirq, offloads) come after: a server with hundreds of threads
        on a busy machine took seconds to read, which must not stretch the instant the counters stand for.
        """
        t0 = self.clock()
        got = {s.name: s.sample() for s in self.sources if s.instant}
        t = (t0 + self.clock()) / 2
        got |= {s.name: s.sample() for s in self.sources if not s.instant}
        return Snapshot(t, tuple((s, got[s.name]) for s in self.sources))

    def progress(self, s: Snapshot) -> tuple[float, float] | None:
        """(instant, bytes the storage ports — every interface without them — had carried) at ``s``; None
        without any."""
        carried = [c for src, v in s.readings if isinstance(src, Carries) and (c := src.carried(v)) is not None]
        return (s.t, sum(carried)) if carried else None

    def interpolate(self, a: Snapshot, b: Snapshot, t: float) -> Snapshot:
        """The counters at instant ``t`` between two of this window's samples (see ``interpolate``)."""
        return interpolate(a, b, t)

    def delta(self, a: Snapshot, b: Snapshot) -> Fields:
        """What happened between two snapshots, as a JSON-ready dict of Telemetry fields."""
        return delta(a, b)

    def device(self, a: Snapshot, b: Snapshot) -> DeviceCounters | None:
        """What the device model counted between two snapshots (None: the window does not watch one, or it could
        not be read at either)."""
        src = next((s for s in self.sources if isinstance(s, DeviceStats)), None)
        return None if src is None else between(a.of(src.name), b.of(src.name))


def _pairs(a: Snapshot, b: Snapshot) -> list[tuple[Source[Any], Any, Any]]:
    if [s.name for s, _ in a.readings] != [s.name for s, _ in b.readings]:
        raise ValueError("telemetry: two snapshots of different windows")
    return [(s, x, y) for (s, x), (_, y) in zip(a.readings, b.readings)]


def delta(a: Snapshot, b: Snapshot) -> Fields:
    """What happened between two snapshots: the time between them and each source's fields, merged."""
    out: Fields = {"elapsed_s": b.t - a.t}
    for source, before, after in _pairs(a, b):
        fields = source.delta(before, after)
        if clash := out.keys() & fields.keys():
            raise ValueError(f"telemetry: two sources give {', '.join(sorted(clash))}")
        out |= fields
    return out


def interpolate(a: Snapshot, b: Snapshot, t: float) -> Snapshot:
    """The counters at instant ``t`` between samples ``a`` and ``b``, each read on the straight line
    between its two values (counters grow about evenly over a second of steady load); each source says
    how its counters are read there. Used where a boundary is known only after the fact (a fio client run)."""
    f = 0.0 if b.t <= a.t else min(1.0, max(0.0, (t - a.t) / (b.t - a.t)))
    return Snapshot(lerp(a.t, b.t, f), tuple((s, s.interpolate(x, y, f)) for s, x, y in _pairs(a, b)))
