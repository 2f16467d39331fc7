"""Per-I/O figures from a measured window and its telemetry: CPU µs, packets and wire bytes per I/O."""

from __future__ import annotations

from typing import Any


def per_io(total: float | None, ios: int, scale: float = 1.0) -> float | None:
    """``total × scale / ios``, or None when there is nothing to divide."""
    if total is None or ios <= 0:
        return None
    return total * scale / ios


def derive(ios: int, loadgen_cpu_s: float, telemetry: dict[str, Any] | None,
           storage_ports: list[str] | None = None) -> dict[str, Any]:
    """CPU per I/O (load generator, server, machine), packets and wire bytes per I/O, traffic per path.

    ``telemetry`` is a window delta (see telemetry.window.Window.delta); ``storage_ports`` names the
    interfaces ('netns/ifname') on the storage side of the wire, whose traffic is the protocol's.
    """
    out: dict[str, Any] = {
        "ios": ios,
        "loadgen_cpu_s": loadgen_cpu_s,
        "cpu_us_per_io_loadgen": per_io(loadgen_cpu_s, ios, 1e6),
    }
    if not telemetry:
        return out
    servers = {k: v for k, v in telemetry.get("servers_cpu_s", {}).items() if v is not None}
    server_s = sum(servers.values()) if servers else None
    out |= {
        "server_cpu_s": server_s,
        "server_cpu_s_by_process": servers,
        "cpu_us_per_io_server": per_io(server_s, ios, 1e6),
        "machine_cpu_s": telemetry.get("machine_busy_s"),
        "cpu_us_per_io_total": per_io(telemetry.get("machine_busy_s"), ios, 1e6),
        "window_s": telemetry.get("elapsed_s"),
    }
    ifaces = telemetry.get("interfaces", {})
    ports = [p for p in (storage_ports or []) if p in ifaces]
    if ports:
        packets = sum(ifaces[p]["rx_packets"] + ifaces[p]["tx_packets"] for p in ports)
        wire = sum(ifaces[p]["rx_bytes"] + ifaces[p]["tx_bytes"] for p in ports)
        out |= {
            "packets_per_io": per_io(packets, ios),
            "wire_bytes_per_io": per_io(wire, ios),
            "bytes_by_port": {p: ifaces[p]["rx_bytes"] + ifaces[p]["tx_bytes"] for p in ports},
        }
        if wire:
            out["share_by_port"] = {p: out["bytes_by_port"][p] / wire for p in ports}
    return out
