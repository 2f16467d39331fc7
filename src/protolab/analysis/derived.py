"""Per-I/O figures from a measured window and its telemetry: CPU µs, packets and wire bytes per I/O."""

from __future__ import annotations

from typing import Any


def per_io(total: float | None, ios: int, scale: float = 1.0) -> float | None:
    """``total × scale / ios``, or None when there is nothing to divide."""
    if total is None or ios <= 0:
        return None
    return total * scale / ios


# A window whose machine-wide busy CPU, less the roles' own, exceeds this share of the
# machine's capacity ran beside other work: its machine-wide figures are context only.
BUSY_OTHER_SHARE = 0.25

SEGMENTS = "segments handed to the NIC"


def derive(ios: int, loadgen_cpu_s: float, telemetry: dict[str, Any] | None,
           storage_ports: list[str] | None = None) -> dict[str, Any]:
    """CPU per I/O (load generator, server, machine), packets and wire bytes per I/O, traffic per path.

    ``telemetry`` is a window delta (see telemetry.window.Window.delta); ``storage_ports`` names the
    interfaces ('netns/ifname') on the storage side of the wire, whose traffic is the protocol's.

    With role cgroups in the telemetry, server and load-generator CPU come from them (``cpu_source``
    "cgroup"): other work on the machine cannot change them. Machine-wide CPU stays as context, with
    ``machine_busy_other_work`` set when other work used more than BUSY_OTHER_SHARE of the machine.
    Packets are frames only with segmentation offloads off on every storage port
    (``packets_counted_as`` "frames", ``frames_per_io``); otherwise they are super-packets
    (``packets_counted_as`` "segments handed to the NIC", ``segments_per_io``), not comparable
    with the wire model's frames.
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
    roles = telemetry.get("roles_cpu_s") or {}
    out |= {
        "server_cpu_s": server_s,
        "server_cpu_s_by_process": servers,
        "cpu_us_per_io_server": per_io(server_s, ios, 1e6),
        "machine_cpu_s": telemetry.get("machine_busy_s"),
        "cpu_us_per_io_total": per_io(telemetry.get("machine_busy_s"), ios, 1e6),
        "window_s": telemetry.get("elapsed_s"),
        "cpu_source": "cgroup" if roles else "process",
    }
    if roles:
        out |= {"role_cpu_s": roles,
                "loadgen_cpu_s_fio": loadgen_cpu_s,  # fio's own figure, its job threads only
                "cpu_us_per_io_role": {r: per_io(v, ios, 1e6) for r, v in roles.items()}}
        if "servers" in roles and servers:  # a run without servers (local targets) has no server CPU to report
            out |= {"server_cpu_s": roles["servers"], "cpu_us_per_io_server": per_io(roles["servers"], ios, 1e6)}
        if roles.get("loadgen"):
            out |= {"loadgen_cpu_s": roles["loadgen"], "cpu_us_per_io_loadgen": per_io(roles["loadgen"], ios, 1e6)}
    busy, total = telemetry.get("machine_busy_s"), telemetry.get("machine_total_s")
    if busy is not None and total:
        ours = sum(roles.values()) if roles else (server_s or 0.0) + loadgen_cpu_s
        other = max(0.0, busy - ours)
        out |= {"machine_other_cpu_s": other, "machine_other_share": other / total,
                "machine_busy_other_work": other / total > BUSY_OTHER_SHARE}
    ifaces = telemetry.get("interfaces", {})
    ports = [p for p in (storage_ports or []) if p in ifaces]
    if ports:
        packets = sum(ifaces[p]["rx_packets"] + ifaces[p]["tx_packets"] for p in ports)
        wire = sum(ifaces[p]["rx_bytes"] + ifaces[p]["tx_bytes"] for p in ports)
        offloads = [telemetry.get("offloads", {}).get(p) for p in ports]
        counted_as = "frames" if offloads and all(o is False for o in offloads) else SEGMENTS
        out |= {
            "packets_counted_as": counted_as,
            "frames_per_io" if counted_as == "frames" else "segments_per_io": per_io(packets, ios),
            "packets_per_io": per_io(packets, ios),
            "wire_bytes_per_io": per_io(wire, ios),
            "bytes_by_port": {p: ifaces[p]["rx_bytes"] + ifaces[p]["tx_bytes"] for p in ports},
        }
        if wire:
            out["share_by_port"] = {p: out["bytes_by_port"][p] / wire for p in ports}
    return out


def busy_note(extras: list[dict[str, Any]]) -> str:
    """A warning for a report when windows ran while the machine was busy with other work ("" if none)."""
    flagged = [e for e in extras if e.get("machine_busy_other_work")]
    if not flagged:
        return ""
    worst = max(e.get("machine_other_share") or 0.0 for e in flagged)
    roles = "servers' and load generators' CPU come from their cgroups and hold" \
        if all(e.get("cpu_source") == "cgroup" for e in flagged) else \
        "CPU figures taken without role cgroups may include that work"
    return (f"{len(flagged)} of {len(extras)} windows ran while the machine was busy with other work "
            f"(up to {worst * 100:.0f} % of its CPU); machine-wide CPU per I/O is context only, {roles}")
