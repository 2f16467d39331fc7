"""A telemetry window: samples taken right before and right after the measured fio run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..proc import Runner
from .cgroups import RoleCgroups
from .cpu import cores_softirq_seconds, machine_cpu_seconds, thread_cpu_seconds, tree_cpu_seconds
from .net import Counters, read_namespaces, read_offloads
from .source import Source


@dataclass
class Snapshot:
    """Counters at one instant."""

    t: float
    machine_busy_s: float
    machine_total_s: float
    servers_s: dict[str, float | None]
    interfaces: dict[tuple[str, str], Counters]
    roles_s: dict[str, float] = field(default_factory=dict)
    offloads: dict[tuple[str, str], bool | None] = field(default_factory=dict)
    threads: dict[str, dict[str, float]] = field(default_factory=dict)  # server → 'comm#tid' → seconds
    softirq_s: list[float] = field(default_factory=list)  # per core
    roles_wait_s: dict[str, float] = field(default_factory=dict)  # role → seconds waiting for a CPU (PSI)
    weighted: bool = False  # the roles at the highest CPU weight (telemetry.priority)
    sources: dict[str, Any] = field(default_factory=dict)  # each extra source's sample (telemetry.source)


@dataclass
class Window:
    """Samples CPU of the storage servers, of each role's cgroup and of the machine, and the lab's interfaces.

    ``cgroups``, when given, is read around the window: CPU per role (servers, loadgen, …)
    that other work on the machine cannot change. The interfaces' offload state is read
    too, so packet counts can be told apart: frames (offloads off) or super-packets.
    """

    runner: Runner
    server_pids: dict[str, int] = field(default_factory=dict)
    interfaces: list[tuple[str, str]] = field(default_factory=list)  # (netns, ifname)
    clock: Callable[[], float] = time.monotonic
    cgroups: RoleCgroups | None = None
    offload_ports: list[tuple[str, str]] | None = None  # whose offload state to read; None: every interface
    sources: list[Source] = field(default_factory=list)  # more counters read around the window (e.g. QEMU's)
    _offloads: dict[tuple[str, str], bool | None] | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        """A new measured window begins: its cell's link is set, so the offload state is read again (a
        configuration may set other offloads than the last cell's)."""
        self._offloads = None

    def sample(self) -> Snapshot:
        """Read every counter now.

        The counters a window's figures are made of (role and machine CPU, bytes and packets, the servers'
        CPU) are read first, in a few milliseconds, and the sample's instant is the middle of those reads;
        per-thread CPU and softirq (the bottleneck's detail) come after: a server with hundreds of threads on
        a busy machine took seconds to read, which must not stretch the instant the counters stand for.
        """
        t0 = self.clock()
        roles = self.cgroups.read() if self.cgroups is not None else {}
        busy, total = machine_cpu_seconds()
        seen = read_namespaces(self.runner, sorted({ns for ns, _ in self.interfaces}))
        counters = {(ns, ifname): seen[ns][ifname] for ns, ifname in self.interfaces if ifname in seen[ns]}
        servers = {name: tree_cpu_seconds(pid) for name, pid in self.server_pids.items()}
        t = (t0 + self.clock()) / 2
        waits = self.cgroups.cpu_wait() if self.cgroups is not None else {}
        threads = {name: thread_cpu_seconds(pid) for name, pid in self.server_pids.items()}
        try:
            softirq = cores_softirq_seconds()
        except OSError:
            softirq = []
        if self._offloads is None:  # a link's offloads change only between cells: read once per window
            ports = self.interfaces if self.offload_ports is None else self.offload_ports
            self._offloads = {key: read_offloads(self.runner, key[0], key[1]) for key in ports}
        weighted = self.cgroups is not None and getattr(self.cgroups, "priority", None) is not None \
            and self.cgroups.priority.on
        return Snapshot(t, busy, total, servers, counters, roles, dict(self._offloads), threads, softirq, waits,
                        weighted, {s.name: s.sample() for s in self.sources})

    def progress(self, s: Snapshot) -> tuple[float, float] | None:
        """(instant, bytes the storage ports — every interface without them — had carried) at ``s``; None
        without any."""
        ports = self.interfaces if self.offload_ports is None else self.offload_ports
        counted = [s.interfaces[p] for p in ports if p in s.interfaces]
        return (s.t, float(sum(c.rx_bytes + c.tx_bytes for c in counted))) if counted else None

    def interpolate(self, a: Snapshot, b: Snapshot, t: float) -> Snapshot:
        """The counters at instant ``t`` between two of this window's samples (see ``interpolate``), every
        source's too."""
        snap = interpolate(a, b, t)
        f = 0.0 if b.t <= a.t else min(1.0, max(0.0, (t - a.t) / (b.t - a.t)))
        snap.sources = {s.name: s.interpolate(a.sources[s.name], b.sources[s.name], f)
                        for s in self.sources if s.name in a.sources and s.name in b.sources}
        return snap

    def delta(self, a: Snapshot, b: Snapshot) -> dict:
        """What happened between two snapshots, as a JSON-ready dict: the window's own counters, then each
        source's entries."""
        out = counters_delta(a, b)
        for s in self.sources:
            if s.name in a.sources and s.name in b.sources:
                out.update(s.delta(a.sources[s.name], b.sources[s.name]))
        return out


def counters_delta(a: Snapshot, b: Snapshot) -> dict:
    """What the window's own counters did between two snapshots, as a JSON-ready dict."""
    servers = {}
    for name, before in a.servers_s.items():
        after = b.servers_s.get(name)
        servers[name] = None if before is None or after is None else max(0.0, after - before)
    ifaces = {}
    for key, before in a.interfaces.items():
        if key in b.interfaces:
            d = b.interfaces[key] - before
            ifaces[f"{key[0]}/{key[1]}"] = {"rx_bytes": d.rx_bytes, "tx_bytes": d.tx_bytes,
                                            "rx_packets": d.rx_packets, "tx_packets": d.tx_packets}
    out = {
        "elapsed_s": b.t - a.t,
        "machine_busy_s": b.machine_busy_s - a.machine_busy_s,
        "machine_total_s": b.machine_total_s - a.machine_total_s,
        "servers_cpu_s": servers,
        "interfaces": ifaces,
        "offloads": {f"{ns}/{ifname}": on for (ns, ifname), on in a.offloads.items()},
    }
    busiest = {}
    for name, before_t in a.threads.items():
        after_t = b.threads.get(name) or {}
        spent = {k: max(0.0, v - before_t.get(k, 0.0)) for k, v in after_t.items()}  # new threads from 0
        if spent:
            top = max(spent, key=lambda k: spent[k])
            busiest[name] = {"thread": top.rsplit("#", 1)[0], "cpu_s": spent[top], "threads": len(spent),
                             "live_cpu_s": sum(spent.values())}
    if busiest:
        out["server_threads"] = busiest
    if a.softirq_s and len(a.softirq_s) == len(b.softirq_s):
        out["cores_softirq_s"] = [max(0.0, y - x) for x, y in zip(a.softirq_s, b.softirq_s)]
    waits = {r: max(0.0, b.roles_wait_s[r] - v) for r, v in a.roles_wait_s.items() if r in b.roles_wait_s}
    if waits:
        out["roles_cpu_wait_s"] = waits
    if a.weighted and b.weighted:
        out["roles_cpu_weight"] = "highest"
    if a.roles_s:
        out["roles_cpu_s"] = {role: max(0.0, b.roles_s[role] - v) for role, v in a.roles_s.items()
                              if role in b.roles_s}
    return out


def _lerp(a: float, b: float, f: float) -> float:
    return a + (b - a) * f


def interpolate(a: Snapshot, b: Snapshot, t: float) -> Snapshot:
    """The counters at instant ``t`` between samples ``a`` and ``b``, each read on the straight line
    between its two values (counters grow about evenly over a second of steady load); offload
    states are ``a``'s. Used where a boundary is known only after the fact (a fio client run)."""
    f = 0.0 if b.t <= a.t else min(1.0, max(0.0, (t - a.t) / (b.t - a.t)))
    servers = {k: None if v is None or b.servers_s.get(k) is None else _lerp(v, b.servers_s[k], f)  # type: ignore[arg-type]
               for k, v in a.servers_s.items()}
    ifaces = {}
    for key, ca in a.interfaces.items():
        cb = b.interfaces.get(key, ca)
        ifaces[key] = Counters(*(round(_lerp(getattr(ca, n), getattr(cb, n), f))
                                 for n in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")))
    roles = {k: _lerp(v, b.roles_s.get(k, v), f) for k, v in a.roles_s.items()}
    # threads alive in both samples only (a thread that ended between them has no line to read)
    threads = {name: {tid: _lerp(v, b.threads[name][tid], f) for tid, v in ts.items() if tid in b.threads[name]}
               for name, ts in a.threads.items() if name in b.threads}
    softirq = [_lerp(x, y, f) for x, y in zip(a.softirq_s, b.softirq_s)]
    waits = {k: _lerp(v, b.roles_wait_s.get(k, v), f) for k, v in a.roles_wait_s.items()}
    return Snapshot(_lerp(a.t, b.t, f), _lerp(a.machine_busy_s, b.machine_busy_s, f),
                    _lerp(a.machine_total_s, b.machine_total_s, f), servers, ifaces, roles, dict(a.offloads),
                    threads, softirq, waits, a.weighted and b.weighted)
