"""Per-I/O figures from a measured window and its telemetry: CPU µs, packets and wire bytes per I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from ..results.records import CellRecord


def per_io(total: float | None, ios: int, scale: float = 1.0) -> float | None:
    """``total × scale / ios``, or None when there is nothing to divide."""
    if total is None or ios <= 0:
        return None
    return total * scale / ios


# A window whose machine-wide busy CPU, less the roles' own, exceeds this share of the
# machine's capacity ran beside other work: its machine-wide figures are context only.
BUSY_OTHER_SHARE = 0.25

SEGMENTS = "segments handed to the NIC"


def derive(ios: int, loadgen_cpu_s: float | None, telemetry: dict[str, Any] | None,
           storage_ports: list[str] | None = None) -> dict[str, Any]:
    """CPU per I/O (load generator, server, machine), packets and wire bytes per I/O, traffic per path.

    ``telemetry`` is a window delta (see telemetry.telemetry_window.Window.delta); ``storage_ports`` names the
    interfaces ('netns/ifname') on the storage side of the wire, whose traffic is the protocol's.

    With role cgroups in the telemetry, server and load-generator CPU come from them (``cpu_source``
    "cgroup"): other work on the machine cannot change them. Machine-wide CPU stays as context, with
    ``machine_busy_other_work`` set when other work used more than BUSY_OTHER_SHARE of the machine.
    Packets are frames only with segmentation offloads off on every storage port
    (``packets_counted_as`` "frames", ``frames_per_io``); otherwise they are super-packets
    (``packets_counted_as`` "segments handed to the NIC", ``segments_per_io``), not comparable
    with the wire model's frames.
    """
    if telemetry is not None and not isinstance(telemetry, dict):
        telemetry = telemetry.model_dump()
        storage_ports = storage_ports if storage_ports is not None else telemetry.get("storage_ports")
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
        "cpu_weight": telemetry.get("roles_cpu_weight"),
    }
    if roles:
        out |= {"role_cpu_s": roles,
                "loadgen_cpu_s_fio": loadgen_cpu_s,  # fio's own figure, its job threads only
                "cpu_us_per_io_role": {r: per_io(v, ios, 1e6) for r, v in roles.items()}}
        if "servers" in roles and servers:  # a run without servers (local targets) has no server CPU to report
            out |= {"server_cpu_s": roles["servers"], "cpu_us_per_io_server": per_io(roles["servers"], ios, 1e6)}
        if roles.get("loadgen"):
            out |= {"loadgen_cpu_s": roles["loadgen"], "cpu_us_per_io_loadgen": per_io(roles["loadgen"], ios, 1e6)}
    hv = telemetry.get("hypervisor_cpu_s") or {}
    if hv:  # VMs as load hosts: fio's own CPU is the guests'; the hypervisor's is QEMU's threads
        hv_s = roles.get("hypervisors") or sum(hv.values())
        out |= {"cpu_us_per_io_guest": per_io(loadgen_cpu_s, ios, 1e6),
                "hypervisor_cpu_s": hv_s, "cpu_us_per_io_hypervisor": per_io(hv_s, ios, 1e6),
                "cpu_us_per_io_hv_vcpu": per_io(hv.get("vcpu"), ios, 1e6),
                "cpu_us_per_io_hv_io": per_io(hv.get("io"), ios, 1e6)}
    guest_server = telemetry.get("server_guest_cpu_s")
    if guest_server is not None:  # the kernel data paths' targets, as the server guest's own kernel counts them
        out |= {"server_guest_cpu_s": guest_server,
                "cpu_us_per_io_server_guest": per_io(guest_server, ios, 1e6)}
    busy, total = telemetry.get("machine_busy_s"), telemetry.get("machine_total_s")
    if busy is not None and total:
        ours = sum(roles.values()) if roles else (server_s or 0.0) + (loadgen_cpu_s or 0.0)
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


class Figures(BaseModel):
    """A record's derived figures (see `derive`); None where the window had nothing to derive them from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ios: int = 0
    loadgen_cpu_s: float | None = None
    cpu_us_per_io_loadgen: float | None = None
    server_cpu_s: float | None = None
    server_cpu_s_by_process: dict[str, float] = {}
    cpu_us_per_io_server: float | None = None
    machine_cpu_s: float | None = None
    cpu_us_per_io_total: float | None = None
    window_s: float | None = None
    cpu_source: str | None = None
    cpu_weight: str | None = None  # "highest": the roles ran at the highest CPU weight (telemetry.priority)
    role_cpu_s: dict[str, float] = {}
    loadgen_cpu_s_fio: float | None = None
    cpu_us_per_io_role: dict[str, float | None] = {}
    machine_other_cpu_s: float | None = None
    machine_other_share: float | None = None
    machine_busy_other_work: bool = False
    packets_counted_as: str | None = None
    frames_per_io: float | None = None
    segments_per_io: float | None = None
    packets_per_io: float | None = None
    wire_bytes_per_io: float | None = None
    cpu_us_per_io_guest: float | None = None
    hypervisor_cpu_s: float | None = None
    cpu_us_per_io_hypervisor: float | None = None
    cpu_us_per_io_hv_vcpu: float | None = None
    cpu_us_per_io_hv_io: float | None = None
    server_guest_cpu_s: float | None = None
    cpu_us_per_io_server_guest: float | None = None
    bytes_by_port: dict[str, int] = {}
    share_by_port: dict[str, float] = {}

    def csv_fields(self) -> dict[str, Any]:
        """The figures cells.csv carries; the share of bytes per storage port as one field, '25.1/24.9/25.0/25.0'
        (% in port order; None without traffic)."""
        out = self.model_dump(exclude={"server_cpu_s_by_process", "role_cpu_s", "cpu_us_per_io_role",
                                       "bytes_by_port", "share_by_port"})
        out["share_by_port"] = "/".join(f"{100 * v:.1f}" for v in self.share_by_port.values()) or None
        return out


_CACHE: dict[int, tuple[Any, Figures]] = {}


def figures(rec: CellRecord) -> Figures:
    """The derived figures of a record, computed from its raw counters with today's formulas (cached)."""
    hit = _CACHE.get(id(rec))
    if hit is not None and hit[0] is rec:
        return hit[1]
    r = rec.result
    loadgen = sum(r.per_host_cpu_s.values()) if r.per_host_cpu_s else None
    out = Figures(**derive(r.read.ios + r.write.ios, loadgen, rec.telemetry))
    if len(_CACHE) > 200_000:
        _CACHE.clear()
    _CACHE[id(rec)] = (rec, out)
    return out


def busy_note(windows: list[Figures | dict[str, Any]]) -> str:
    """A warning for a report when windows ran while the machine was busy with other work ("" if none)."""
    extras = [w if isinstance(w, Figures) else Figures(**w) for w in windows]
    flagged = [e for e in extras if e.machine_busy_other_work]
    if not flagged:
        return ""
    worst = max(e.machine_other_share or 0.0 for e in flagged)
    roles = "servers' and load generators' CPU come from their cgroups and hold" \
        if all(e.cpu_source == "cgroup" for e in flagged) else \
        "CPU figures taken without role cgroups may include that work"
    if all(e.cpu_weight == "highest" for e in flagged):
        roles += " (they ran at the highest CPU weight: that work had the CPU they left idle)"
    return (f"{len(flagged)} of {len(extras)} windows ran while the machine was busy with other work "
            f"(up to {worst * 100:.0f} % of its CPU); machine-wide CPU per I/O is context only, {roles}")
