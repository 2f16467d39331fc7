"""The lab's storage servers: which protocol each serves, and whether it is a kernel's (the one owner of that list).

A lab target (`lab:PROTOCOL`) is served by the protocol's own server (plan.protocols: tgt, NFS-Ganesha, nbdkit,
nvmet) unless its configuration names another with `server = "…"`. Kernel servers run in the lab's storage
server guest and are reached by the load guests' kernels (vm.kernelpaths), so they need a [hypervisor] table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Server:
    """A storage server of the lab: its name in plans, the protocol it serves, its title, kernel or userspace."""

    name: str
    protocol: str
    title: str
    kernel: bool = False
    modules: tuple[str, ...] = ()  # a kernel server's target and initiator modules (doctor: does this host have them)


SERVERS: dict[str, Server] = {s.name: s for s in [
    Server("tgt", "iscsi", "tgt"),
    Server("lio", "iscsi", "LIO", kernel=True, modules=("iscsi_target_mod", "iscsi_tcp")),
    Server("ganesha", "nfs", "NFS-Ganesha"),
    Server("nbdkit", "nbd", "nbdkit"),
    Server("samba", "smb", "Samba"),
    Server("nvmet", "nvme-tcp", "nvmet-tcp", kernel=True, modules=("nvmet-tcp", "nvme-tcp")),
    Server("knfsd", "nfs", "knfsd", kernel=True, modules=("nfsd", "nfsv4")),
]}

POOL_HEADROOM = 256 * 1024**2  # btrfs metadata and the system chunk
FS_SLACK = 64 * 1024**2  # the knfsd volume's ext4: inode tables, bitmaps and journal at the smallest export


def fs_image_bytes(export_bytes: int) -> int:
    """The knfsd volume's ext4 image (lab.fsvolume) for a data file of ``export_bytes``: ext4's own blocks on top."""
    return export_bytes + FS_SLACK + export_bytes // 64


def pool_need(exports: int, export_bytes: int, knfsd: bool) -> int:
    """The pool size ``exports`` lab exports of ``export_bytes`` need, with the knfsd volume when ``knfsd``."""
    return exports * export_bytes + POOL_HEADROOM + (fs_image_bytes(export_bytes) if knfsd else 0)


def uses_knfsd(configurations) -> bool:
    """True when a configuration is a lab NFS target served by knfsd (the pool gets the knfsd volume)."""
    return any(c.server == "knfsd" for c in configurations)


def serving(protocol: str) -> list[str]:
    """The servers that can serve ``protocol``."""
    return [s.name for s in SERVERS.values() if s.protocol == protocol]


def server_for(protocol: str | None, chosen: str | None) -> Server | None:
    """The server of a lab target of ``protocol``: ``chosen``, else the protocol's own (None for lab:local)."""
    from .protocols import PROTOCOLS

    if chosen is not None:
        return SERVERS[chosen]
    own = PROTOCOLS[protocol].server if protocol in PROTOCOLS else None
    return SERVERS.get(own or "")


def kernel_served(protocol: str | None, chosen: str | None) -> bool:
    """True when a kernel serves a lab target of ``protocol`` with server ``chosen`` (its guests' kernels attach it)."""
    s = server_for(protocol, chosen)
    return s is not None and s.kernel


def kernel_path(url: str, server: str | None = None) -> bool:
    """True when ``url`` is a lab target the guests' kernels attach (they run in guests only): served by a kernel,
    or of a protocol only a kernel's client reaches (plan.protocols.guest_kernel_only)."""
    from .protocols import guest_kernel_only
    from .target_grammar import is_lab_target, protocol_named

    if not is_lab_target(url):
        return False
    protocol = protocol_named(url)
    return kernel_served(protocol, server) or guest_kernel_only(protocol)


def kernel_protocols() -> list[str]:
    """The protocols the guests' kernels attach: those some kernel server serves, and those only a kernel's client
    reaches."""
    from .protocols import guest_kernel_only

    return list(dict.fromkeys(s.protocol for s in SERVERS.values() if s.kernel or guest_kernel_only(s.protocol)))


def check_server(protocol: str | None, chosen: str | None, sessions: int | None, nfs: object = None,
                 iscsi: object = None) -> None:
    """ValueError (one sentence, what to write) unless ``chosen`` serves ``protocol`` and ``sessions``, ``nfs`` (a
    load guest's NFS mount) and ``iscsi`` (a load guest's open-iscsi timeouts) fit."""
    if chosen is not None:
        if chosen not in SERVERS:
            raise ValueError(f"server {chosen!r} is not a lab server; use one of {', '.join(SERVERS)}")
        if protocol is None or SERVERS[chosen].protocol != protocol:
            choices = serving(protocol) if protocol else []
            raise ValueError(f"server {chosen!r} serves {SERVERS[chosen].protocol}, not "
                             f"{'this target' if protocol is None else protocol}; "
                             + (f"use one of {', '.join(choices)}" if choices else "remove server"))
    if sessions is not None:
        if not (protocol == "iscsi" and kernel_served(protocol, chosen)):
            raise ValueError("sessions applies to iSCSI logged in by a guest's kernel (server = \"lio\"); "
                             "remove sessions")
    if iscsi is not None and not (protocol == "iscsi" and kernel_served(protocol, chosen)):
        raise ValueError("iscsi (open-iscsi's timeouts) applies to iSCSI logged in by a guest's kernel (server = "
                         "\"lio\"); remove iscsi")
    if nfs is not None and not (protocol == "nfs" and kernel_served(protocol, chosen)):
        raise ValueError("nfs applies to NFS mounted by a guest's kernel (server = \"knfsd\"); remove nfs")
