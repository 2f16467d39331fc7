"""A lab described for people: `protolab lab status` and the run's log."""

from __future__ import annotations

from typing import Any


def describe(lab: Any) -> str:
    """Topology, addresses, exports and how to reach each, for people (``lab``: a lab.lab.Lab; typed loosely, as
    lab.lab imports this module)."""
    s, n, link = lab.spec, lab.names, lab.link
    lines = [
        f"lab '{s.prefix}' in {lab.workdir} ({'up' if lab.is_up else 'down'})",
        f"  switch   {n.switch_ns}: bridge {n.bridge}",
        f"  links    rate {link.rate or 'unshaped'}, mtu {link.mtu}, delay {link.delay or '0'} "
        f"(each direction of each link), loss {link.loss_pct:g}%, offloads {'on' if link.offloads else 'off'}",
    ]
    for p in range(s.storage_ports):
        l = n.storage_link(p)
        lines.append(f"  storage  {n.storage_ns} port {p}: {l.near.ifname} {l.address}")
    for h in range(s.hosts):
        for nic in range(s.nics_per_host):
            l = n.host_link(h, nic)
            lines.append(f"  host {h}   {n.host_ns(h)} nic {nic}: {l.near.ifname} {l.address} "
                         f"-> storage port {s.port_of(h, nic)}")
    lines.append(f"  pool     btrfs {s.pool_size} at {lab.workdir / n.mount_dir / n.pool_mount}, "
                 f"exports of {s.export_size}, {'copy-on-write' if s.cow else 'no copy-on-write'}")
    lines.append(f"  device   {s.device.name}: {s.device.summary()}")
    pids = lab.server_pids()
    for proto in sorted(lab.protocols):
        hosts = s.access(proto).hosts
        granted = "every host" if hosts is None else ("hosts " + ", ".join(map(str, hosts)) if hosts else "no host")
        if lab.server_of(proto) is None:
            granted = "the storage namespace"
        ep = lab.endpoint(proto) if lab.is_up else None
        where = f"{ep.url} (from {ep.netns})" if ep else "-"
        lines.append(f"  {proto:<8} {where}; admits {granted}")
    fs = lab.fs_volume
    if fs is not None:
        whose = f"mounted here at {fs.mount}" if fs.held else "the storage server guest's disk"
        lines.append(f"  knfsd    ext4 image {fs.image} ({whose})")
    if pids:
        lines.append("  servers  " + ", ".join(f"{k} pid {v}" for k, v in sorted(pids.items())))
    faults = lab.faults.in_force() if lab.is_up else []
    if faults:
        lines.append("  faults   " + "; ".join(faults) + " (lab.fault_controls; restore() or lab down undoes them)")
    return "\n".join(lines)
