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

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import TYPE_CHECKING

from ..errors import ProtolabError
from ..lab.names import SUBNET_PREFIXLEN, Names, check_in_lab_range
from ..plan import attach
from ..plan.protocols import PROTOCOLS
from ..proc import Runner, SubprocessRunner
from .guestcpu import StatChannel
from .guestnet import DataNic
from .guestssh import GuestSsh
from .image import GuestImage
from .qemu import Disk, Guest, GuestSpec

if TYPE_CHECKING:
    from ..lab.lab import Lab

NVME_TCP_PORT = PROTOCOLS["nvme-tcp"].port
MAX_QUEUES, MAX_SESSIONS = attach.MAX_QUEUES, attach.MAX_SESSIONS
ISCSI_PORT = PROTOCOLS["iscsi"].port


def check_nqn(nqn: str, what: str = "NQN") -> str:
    """``nqn`` if it follows the NQN grammar (plan.attach.check_nqn); ProtolabError if not."""
    try:
        return attach.check_nqn(nqn, what)
    except ValueError as e:
        raise ProtolabError(str(e)) from None


def check_iqn(iqn: str, what: str = "IQN") -> str:
    """``iqn`` if it follows the iSCSI name grammar (plan.attach.check_iqn); ProtolabError if not."""
    try:  # the plan's grammar: no comma, space or newline reaches the guest
        return attach.check_iqn(iqn, what)
    except ValueError as e:
        raise ProtolabError(str(e)) from None


def _check_serial(disk: str) -> None:
    if not re.fullmatch(r"pl[0-9]{1,2}", disk):
        raise ProtolabError(f"disk serial {disk!r}: protolab's disks are pl0, pl1, …")


def _check_endpoint(address: str, port: int) -> None:
    IPv4Address(address)  # ValueError for anything that is not one address
    check_in_lab_range(address)
    if not 1 <= port <= 65535:
        raise ProtolabError(f"port {port} is not a TCP port (1-65535)")


@dataclass(frozen=True)
class NvmeTarget:
    """What the storage server guest's nvmet-tcp exports: its address and port, the subsystem, the hosts allowed,
    and the disk (by serial) it exports."""

    address: str
    port: int
    nqn: str
    hosts: tuple[str, ...]
    disk: str = "pl0"

    def kernel_args(self) -> list[str]:
        """The server guest's kernel command line word (see scripts/build-guest.sh)."""
        _check_endpoint(self.address, self.port)
        _check_serial(self.disk)
        check_nqn(self.nqn, "subsystem NQN")
        if not self.hosts:
            raise ProtolabError("nvmet-tcp: no host may connect (no load host is granted the export)")
        hosts = [check_nqn(h, "host NQN") for h in self.hosts]
        return [f"pl.nvmet={self.address},{self.port},{self.nqn},{'+'.join(hosts)},{self.disk}"]


@dataclass(frozen=True)
class LioTarget:
    """What the storage server guest's LIO exports over iSCSI: portal, target IQN, initiators allowed, the disk."""

    address: str
    port: int
    iqn: str
    initiators: tuple[str, ...]
    disk: str = "pl1"

    def kernel_args(self) -> list[str]:
        """The server guest's kernel command line word (see scripts/build-guest.sh)."""
        _check_endpoint(self.address, self.port)
        _check_serial(self.disk)
        check_iqn(self.iqn, "target IQN")
        if not self.initiators:
            raise ProtolabError("LIO iSCSI: no initiator may log in (no load host is granted the export)")
        initiators = [check_iqn(i, "initiator IQN") for i in self.initiators]
        return [f"pl.lio={self.address},{self.port},{self.iqn},{'+'.join(initiators)},{self.disk}"]


@dataclass(frozen=True)
class NvmeConnect:
    """A load guest's nvme-tcp connect: the target's address, port and subsystem, I/O queues, its own host NQN."""

    address: str
    port: int
    nqn: str
    queues: int
    hostnqn: str

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh)."""
        _check_endpoint(self.address, self.port)
        if not 1 <= self.queues <= MAX_QUEUES:
            raise ProtolabError(f"nvme-tcp queues {self.queues}: give 1-{MAX_QUEUES}")
        check_nqn(self.nqn, "subsystem NQN")
        check_nqn(self.hostnqn, "host NQN")
        return [f"pl.nvme={self.address},{self.port},{self.nqn},{self.queues},{self.hostnqn}"]


@dataclass(frozen=True)
class IscsiLogin:
    """A load guest's iSCSI logins: the portal, the target IQN, its own initiator IQN, how many sessions."""

    address: str
    port: int
    iqn: str
    initiator: str
    sessions: int = 1

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh)."""
        _check_endpoint(self.address, self.port)
        if not 1 <= self.sessions <= MAX_SESSIONS:
            raise ProtolabError(f"iSCSI sessions {self.sessions}: give 1-{MAX_SESSIONS}")
        check_iqn(self.iqn, "target IQN")
        check_iqn(self.initiator, "initiator IQN")
        return [f"pl.iscsi={self.address},{self.port},{self.iqn},{self.initiator},{self.sessions}"]


#: the server guest's disks, in this order, one per kernel path it serves (serials pl0, pl1, …)
SERVED = ("nvme-tcp", "iscsi", "nfs")


def server_nic(names: Names, mtu: int, port: int = 0) -> DataNic:
    """The storage server guest's data NIC on storage port ``port``."""
    return DataNic(names.storage_ns, names.tap("st"), names.server_guest_address(port), SUBNET_PREFIXLEN,
                   mtu, names.storage_link(port).near.ifname, index=1)


def server_guest_name(names: Names) -> str:
    return f"{names.prefix}-storage-guest"


def knfsd_words(address: str, clients: Sequence[str], disk: str | None = None) -> list[str]:
    """The server guest's word for knfsd exporting /export to ``clients``, each a lab address: the ext4 on the disk
    with serial ``disk`` (the pool's knfsd volume, lab.fsvolume), or with no disk a tmpfs in the guest."""
    IPv4Address(address)
    check_in_lab_range(address)
    if not clients:
        raise ProtolabError("knfsd: no client may mount (no load host is granted the export)")
    for c in clients:
        IPv4Address(c)
        check_in_lab_range(c)
    if disk is not None:
        _check_serial(disk)
    return [f"pl.knfsd={address},{'+'.join(clients)}{f',{disk}' if disk else ''}"]


#: where a load guest mounts the server guest's knfsd export, the line its console says it with
NFS_MOUNT = "/mnt/pl"
NFS_LINE = "protolab-guest: nfs "


@dataclass(frozen=True)
class NfsClient:
    """A load guest's NFS mount of the server guest's /export (on /mnt/pl), with the plan's mount options (version,
    TCP connections, bytes per READ and WRITE; the kernel's own where not given)."""

    address: str
    mount: attach.NfsMount = field(default_factory=attach.NfsMount)

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh); 0: the kernel's size."""
        IPv4Address(self.address)
        check_in_lab_range(self.address)
        m = self.mount
        if m.version not in attach.NFS_VERSIONS:
            raise ProtolabError(f"NFS version {m.version!r}: one of {', '.join(attach.NFS_VERSIONS)}")
        if not 1 <= m.nconnect <= attach.MAX_NCONNECT:
            raise ProtolabError(f"NFS nconnect {m.nconnect}: give 1-{attach.MAX_NCONNECT}")
        for size in (m.rsize, m.wsize):
            if size is not None and size not in attach.RW_SIZES:
                raise ProtolabError(f"NFS rsize or wsize {size}: give a power of two from 4096 to 1048576")
        return [f"pl.nfs={self.address},{m.version},{m.nconnect},{m.rsize or 0},{m.wsize or 0}"]


def server_words(names: Names, address: str, *, nvme_hosts: Sequence[str] = (),
                 iscsi_initiators: Sequence[str] = (), nfs_clients: Sequence[str] = (),
                 knfsd_volume: bool = True) -> tuple[list[str], list[str]]:
    """The storage server guest's kernel command line words for its exports, and the protocols of its disks in
    order (serials pl0, pl1, …). knfsd exports the pool's knfsd volume (a disk) unless ``knfsd_volume`` is False
    (a tmpfs: the user's-host test bed)."""
    words: list[str] = []
    served: list[str] = []
    if nvme_hosts:
        words += NvmeTarget(address, NVME_TCP_PORT, names.nqn, tuple(nvme_hosts), f"pl{len(served)}").kernel_args()
        served.append("nvme-tcp")
    if iscsi_initiators:
        words += LioTarget(address, ISCSI_PORT, names.lio_iqn, tuple(iscsi_initiators),
                           f"pl{len(served)}").kernel_args()
        served.append("iscsi")
    if nfs_clients:
        disk = f"pl{len(served)}" if knfsd_volume else None
        words += knfsd_words(address, nfs_clients, disk)
        if disk:
            served.append("nfs")
    if not words:
        raise ProtolabError("the storage server guest serves nothing: give it nvme-tcp hosts, iSCSI initiators or "
                            "NFS clients")
    return words, served


def server_guest(lab: Lab, image: GuestImage, *, nvme_hosts: Sequence[str] = (), iscsi_initiators: Sequence[str] = (),
                 mtu: int, accel: str = "tcg", vcpus: int = 1, memory_mib: int = 512, fio_port: int, port: int = 0,
                 nfs_clients: Sequence[str] = (), runner: Runner | None = None) -> Guest:
    """The storage server guest (not started) on storage port ``port``: the nvme-tcp volume exported by nvmet-tcp
    to host NQNs ``nvme_hosts``, and the iscsi volume by LIO to initiator IQNs ``iscsi_initiators`` (each only
    when given). Its data NIC runs at ``mtu``, the largest MTU of the run's links, so every configuration's MTU
    works without a reboot: TCP's MSS follows the smaller end. Its QEMU runs in the servers' cgroup: its CPU is
    the storage server's; the guest answers with its own /proc/stat on its stat port (vm.guestcpu). With
    ``nfs_clients``, its knfsd exports the pool's knfsd volume to those addresses (a tmpfs when the lab has no such
    volume: the user's-host test bed); the volume becomes the guest's disk, so this host lets go of it first."""
    names = lab.names
    if nfs_clients and lab.knfsd:
        lab.knfsd_volume.release()  # one kernel mounts the knfsd volume's ext4 at a time
    nic = server_nic(names, mtu, port)
    words, served = server_words(names, nic.address, nvme_hosts=nvme_hosts, iscsi_initiators=iscsi_initiators,
                                 nfs_clients=nfs_clients, knfsd_volume=lab.knfsd)
    disks = [Disk(str(lab.knfsd_volume.image if p == "nfs" else lab.export_file(p)), "virtio-blk") for p in served]
    name = server_guest_name(names)
    spec = GuestSpec(name, image.kernel, image.initrd, accel=accel, vcpus=vcpus, memory_mib=memory_mib,
                     disks=tuple(disks), fio_port=fio_port, nic=nic, append=tuple(words),
                     stat=StatChannel(lab.workdir / "vm" / f"{name}.stat"))
    assert lab._record is not None, "the lab must be up"
    return Guest(spec, runner or SubprocessRunner(), lab._record, names.storage_ns, lab.workdir / "vm",
                 lab.cgroups, role="servers")


def load_guest(lab: Lab, image: GuestImage, name: str, host: int, protocol: str | None = "nvme-tcp", *, vm: int = 0,
               config: int = 0, slot: int = 0, queues: int = 1, sessions: int = 1, accel: str = "tcg", vcpus: int = 1,
               memory_mib: int = 512, fio_port: int, ssh: GuestSsh | None = None, nfs: attach.NfsMount | None = None,
               runner: Runner | None = None) -> Guest:
    """Load guest ``slot`` of host ``host`` (not started): before its fio server is ready, its kernel attaches
    the server guest's export of ``protocol`` over the host's first NIC — nvme-tcp with ``queues`` I/O queues as
    host NQN (host, vm, config), iSCSI with ``sessions`` sessions as initiator IQN (host, vm, config), or knfsd's
    export mounted as ``nfs`` says (NFS 4.1 by default); with ``protocol`` None, nothing. With ``ssh``, it is
    also reached over ssh as a user's host is (vm.guestssh)."""
    names = lab.names
    if lab.spec.port_of(host, 0) != 0:
        raise ProtolabError(f"host {host + 1}: the storage server guest is on storage port 0 only; kernel data paths "
                            "need every host's first NIC on port 0 (lab.paths)")
    nic = DataNic(names.host_ns(host), names.tap(f"g{slot}"), names.load_guest_address(host, slot),
                  SUBNET_PREFIXLEN, lab.link.mtu, names.host_link(host, 0).near.ifname, index=16 + slot)
    server = names.server_guest_address(0)
    if protocol == "nvme-tcp":
        words = NvmeConnect(server, NVME_TCP_PORT, names.nqn, queues, names.host_nqn(host, vm, config)).kernel_args()
    elif protocol == "iscsi":
        words = IscsiLogin(server, ISCSI_PORT, names.lio_iqn, names.initiator_iqn(host, vm, config),
                            sessions).kernel_args()
    elif protocol == "nfs":
        words = NfsClient(server, nfs or attach.NfsMount()).kernel_args()
    elif protocol is None:  # a user's host: protolab attaches over ssh (run.attaching)
        words = []
    else:
        raise ProtolabError(f"kernel data path {protocol!r}: one of {', '.join(SERVED)}")
    spec = GuestSpec(name, image.kernel, image.initrd, accel=accel, vcpus=vcpus, memory_mib=memory_mib,
                     fio_port=fio_port, nic=nic, append=tuple(words), ssh=ssh)
    assert lab._record is not None, "the lab must be up"
    return Guest(spec, runner or SubprocessRunner(), lab._record, names.host_ns(host), lab.workdir / "vm",
                 lab.cgroups)
