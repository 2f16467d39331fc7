"""A telemetry window: samples taken right before and right after the measured fio run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..proc import Runner
from .cpu import machine_cpu_seconds, tree_cpu_seconds
from .net import Counters, read_counters


@dataclass
class Snapshot:
    """Counters at one instant."""

    t: float
    machine_busy_s: float
    machine_total_s: float
    servers_s: dict[str, float | None]
    interfaces: dict[tuple[str, str], Counters]


@dataclass
class Window:
    """Samples CPU of the storage servers and of the machine, and the lab's interfaces."""

    runner: Runner
    server_pids: dict[str, int] = field(default_factory=dict)
    interfaces: list[tuple[str, str]] = field(default_factory=list)  # (netns, ifname)
    clock: Callable[[], float] = time.monotonic

    def sample(self) -> Snapshot:
        """Read every counter now."""
        busy, total = machine_cpu_seconds()
        servers = {name: tree_cpu_seconds(pid) for name, pid in self.server_pids.items()}
        counters: dict[tuple[str, str], Counters] = {}
        for ns in sorted({ns for ns, _ in self.interfaces}):
            seen = read_counters(self.runner, ns)
            for n, ifname in self.interfaces:
                if n == ns and ifname in seen:
                    counters[(ns, ifname)] = seen[ifname]
        return Snapshot(self.clock(), busy, total, servers, counters)

    @staticmethod
    def delta(a: Snapshot, b: Snapshot) -> dict:
        """What happened between two snapshots, as a JSON-ready dict."""
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
        return {
            "elapsed_s": b.t - a.t,
            "machine_busy_s": b.machine_busy_s - a.machine_busy_s,
            "machine_total_s": b.machine_total_s - a.machine_total_s,
            "servers_cpu_s": servers,
            "interfaces": ifaces,
        }
