"""Raw counters that give chosen per-I/O figures: for tests and benchmarks that build records by hand.

Records store counters, not per-I/O figures (those are derived at analysis time),
so a synthetic record that should show "8 µs of server CPU per I/O" needs the
counters that produce it. `telemetry_for` makes them.
"""

from __future__ import annotations

from .records import Telemetry, Traffic


def telemetry_for(ios: int, *, cpu_us_per_io_loadgen: float | None = None,
                  cpu_us_per_io_server: float | None = None, cpu_us_per_io_total: float | None = None,
                  packets_per_io: float | None = None, wire_bytes_per_io: float | None = None,
                  window_s: float = 2.0, cpus: int = 2, port: str = "st/p0") -> Telemetry:
    """Telemetry of a window of ``ios`` I/Os from which `analysis.derived` computes the given figures."""
    roles: dict[str, float] = {}
    servers: dict[str, float | None] = {}
    if cpu_us_per_io_server is not None:
        roles["servers"] = servers["server"] = cpu_us_per_io_server * ios / 1e6
    if cpu_us_per_io_loadgen is not None:
        roles["loadgen"] = cpu_us_per_io_loadgen * ios / 1e6
    busy = cpu_us_per_io_total * ios / 1e6 if cpu_us_per_io_total is not None else sum(roles.values())
    interfaces, ports = {}, []
    if packets_per_io is not None or wire_bytes_per_io is not None:
        interfaces[port] = Traffic(rx_packets=round((packets_per_io or 0) * ios),
                                   rx_bytes=round((wire_bytes_per_io or 0) * ios))
        ports = [port]
    return Telemetry(elapsed_s=window_s, machine_busy_s=busy, machine_total_s=max(busy, window_s * cpus),
                     servers_cpu_s=servers, roles_cpu_s=roles, interfaces=interfaces,
                     offloads={port: False} if ports else {}, storage_ports=ports)
