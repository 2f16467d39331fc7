"""Kernel data paths in guests: the storage server guest's in-kernel target, a load guest's kernel initiator.

This host's kernel has no nvmet, nvme-tcp, LIO, knfsd or iSCSI initiator; the Debian guest kernel protolab
boots has them all. A **storage server guest** runs in the storage namespace with the pool's file as its one
virtio disk and exports it from its kernel; a **load guest** runs in a load host's namespace, attaches the
export with its kernel's initiator and serves fio on the block device. Both sit on the lab's links behind
their namespaces (guestnet), so link rate, MTU and shaping apply and the lab's counters see their traffic.

Three paths; the first two are configured through configfs with no tools in the server guest:
- NVMe/TCP: nvmet-tcp (access by host NQN); the load guest's nvme-tcp connects (/dev/nvme-fabrics, I/O queues
  given).
- iSCSI: LIO (an iblock backstore on the disk, LUN 0, an ACL per initiator IQN, no CHAP); the load guest's
  iscsi_tcp, logged in by open-iscsi's iscsistart once per session asked for (each session a SCSI disk).
- NFS: knfsd with its helpers (rpcbind, exportfs, rpc.mountd, rpc.nfsd) exports the ext4 of the pool's knfsd
  volume (lab.fsvolume) to the load guests' addresses; the load guest's kernel mounts it (NFS 4.1) and fio runs on
  the data file. A restore goes round the guest: it unmounts the volume first and mounts it again after
  (vm.guestcpu's verbs, VmTestbed.restore).
Every value that reaches a guest's kernel command line is checked here first (addresses in the lab range,
ports, counts, NQN and IQN grammar): the guest's init splits them on commas and never evaluates them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import ProtolabError
from ..lab.names import SUBNET_PREFIXLEN, Names
from ..lab.servers import adapter, kernel_adapters
from ..plan.model import Configuration
from ..plan.servers import SERVERS
from ..proc import Runner, SubprocessRunner
from .guestcpu import StatChannel
from .guestnet import DataNic
from .guestssh import GuestSsh
from .image import GuestImage
from .initiators import Attachment, initiator
from .qemu import Disk, Guest, GuestSpec

if TYPE_CHECKING:
    from ..lab.lab import Lab


def server_nic(names: Names, mtu: int, port: int = 0) -> DataNic:
    """The storage server guest's data NIC on storage port ``port``."""
    return DataNic(names.storage_ns, names.tap("st"), names.server_guest_address(port), SUBNET_PREFIXLEN,
                   mtu, names.storage_link(port).near.ifname, index=1)


def server_guest_name(names: Names) -> str:
    return f"{names.prefix}-storage-guest"


def server_words(names: Names, address: str, admitted: Mapping[str, Sequence[str]],
                 own_volume: bool = True) -> tuple[list[str], list[str]]:
    """The storage server guest's kernel command line words for its exports — each kernel server (lab.servers) with
    someone in ``admitted`` (server name → host NQNs, initiator IQNs or addresses) — and those servers in the order
    of its disks (serials pl0, pl1, …). A server that exports its own volume (knfsd) gets a tmpfs instead when
    ``own_volume`` is False (the user's-host test bed)."""
    words: list[str] = []
    served: list[str] = []
    for a in kernel_adapters():
        if not admitted.get(a.name):
            continue
        disk = f"pl{len(served)}" if own_volume or not a.own_volume else None
        words += a.guest_words(names, address, admitted[a.name], disk)
        if disk:
            served.append(a.name)
    if not words:
        raise ProtolabError("the storage server guest serves nothing: give one of its servers ("
                            + ", ".join(a.name for a in kernel_adapters()) + ") someone to admit")
    return words, served


def server_guest(lab: Lab, image: GuestImage, admitted: Mapping[str, Sequence[str]], *, mtu: int,
                 accel: str = "tcg", vcpus: int = 1, memory_mib: int = 512, fio_port: int, port: int = 0,
                 runner: Runner | None = None) -> Guest:
    """The storage server guest (not started) on storage port ``port``: each kernel server with someone in
    ``admitted`` (server name → who) exports its protocol's volume to them. Its data NIC runs at ``mtu``, the
    largest MTU of the run's links, so every configuration's MTU works without a reboot: TCP's MSS follows the
    smaller end. Its QEMU runs in the servers' cgroup: its CPU is the storage server's; the guest answers with its
    own /proc/stat on its stat port (vm.guestcpu). A server exporting its own volume (knfsd: the pool's knfsd
    volume, a tmpfs when the lab has none — the user's-host test bed) gets that volume as its disk, so this host
    lets go of it first."""
    names = lab.names
    adapters = {a.name: a for a in kernel_adapters()}
    if lab.knfsd and any(adapters[s].own_volume for s, who in admitted.items() if who and s in adapters):
        lab.knfsd_volume.release()  # one kernel mounts the knfsd volume's ext4 at a time
    nic = server_nic(names, mtu, port)
    words, served = server_words(names, nic.address, admitted, own_volume=lab.knfsd)
    protocols = {s.name: s.protocol for s in SERVERS.values()}
    disks = [Disk(str(lab.knfsd_volume.image if adapters[s].own_volume else lab.export_file(protocols[s])),
                  "virtio-blk") for s in served]
    name = server_guest_name(names)
    spec = GuestSpec(name, image.kernel, image.initrd, accel=accel, vcpus=vcpus, memory_mib=memory_mib,
                     disks=tuple(disks), fio_port=fio_port, nic=nic, append=tuple(words),
                     stat=StatChannel(lab.workdir / "vm" / f"{name}.stat"))
    record = lab.record
    return Guest(spec, runner or SubprocessRunner(), record, names.storage_ns, lab.workdir / "vm",
                 lab.cgroups, role="servers")


def load_guest(lab: Lab, image: GuestImage, name: str, host: int, c: Configuration | None = None,
               protocol: str | None = None, server: str | None = None, *, vm: int = 0, config: int = 0,
               slot: int = 0, queues: int = 1, accel: str = "tcg", vcpus: int = 1, memory_mib: int = 512,
               fio_port: int, ssh: GuestSsh | None = None, runner: Runner | None = None) -> Guest:
    """Load guest ``slot`` of host ``host`` (not started): before its fio server is ready, its kernel's initiator
    of ``protocol`` (vm.initiators) attaches the export served by ``server`` over the host's first NIC, as
    configuration ``c`` asks (sessions, NFS mount options; ``queues`` I/O queues), presenting itself as guest
    (host, vm, config). A kernel server is reached in the storage server guest, a userspace one in the storage
    namespace. With ``c`` None, nothing is attached; with ``ssh``, it is also reached over ssh as a user's host is
    (vm.guestssh)."""
    names = lab.names
    if lab.spec.port_of(host, 0) != 0:
        raise ProtolabError(f"host {host + 1}: the storage server guest is on storage port 0 only; kernel data paths "
                            "need every host's first NIC on port 0 (lab.paths)")
    nic = DataNic(names.host_ns(host), names.tap(f"g{slot}"), names.load_guest_address(host, slot),
                  SUBNET_PREFIXLEN, lab.link.mtu, names.host_link(host, 0).near.ifname, index=16 + slot)
    words: list[str] = []
    if c is not None:  # without: a user's host, where protolab attaches over ssh (run.attaching)
        init, served = initiator(protocol), adapter(server)
        if init is None or served is None:
            raise ProtolabError(f"kernel data path {protocol!r} served by {server!r}: a guest's kernel attaches "
                                "only a protocol of vm.initiators from a server of lab.servers")
        kernel = served in kernel_adapters()
        address = names.server_guest_address(0) if kernel else names.storage_address(0)
        target = served.target(names)
        words = init.words(Attachment(address, target, init.identity(names, host, vm, config, slot), c, queues,
                                      served.credentials(lab.workdir)))
    spec = GuestSpec(name, image.kernel, image.initrd, accel=accel, vcpus=vcpus, memory_mib=memory_mib,
                     fio_port=fio_port, nic=nic, append=tuple(words), ssh=ssh)
    return Guest(spec, runner or SubprocessRunner(), lab.record, names.host_ns(host), lab.workdir / "vm",
                 lab.cgroups)
