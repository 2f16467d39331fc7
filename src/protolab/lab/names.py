"""Names and addresses of a lab: everything carries the prefix; addresses lie in 198.18.0.0/15.

Storage port ``p`` is 198.18.p.1/24; the NIC of host ``h`` that reaches port ``p`` is
198.18.p.(10+h)/24. One subnet per storage port keeps each path on its own NIC. Guests on the lab's
links (kernel data paths) sit behind them, routed: the storage server guest at 198.18.p.2, host
``h``'s load guest at 198.18.p.(128+h).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from ..plan.topology import LabSpec
from ..trust import LAB_BASE

LAB_ROOT = LAB_BASE  # root-owned, 0700, never removed (protolab.trust)


def default_workdir(prefix: str) -> Path:
    """Where a lab with ``prefix`` keeps its record, pool and logs unless told otherwise."""
    return LAB_ROOT / prefix


LAB_NETWORK = IPv4Network("198.18.0.0/15")
SUBNET_PREFIXLEN = 24
#: Load guests' data addresses start here on each subnet (hosts' NICs at 10 + host, the server guest at 2)
GUEST_BASE = 128
GUEST_SLOTS = 255 - GUEST_BASE


@dataclass(frozen=True)
class LinkEnd:
    """One end of a veth link: the namespace it lives in and its interface name."""

    netns: str
    ifname: str


@dataclass(frozen=True)
class Link:
    """A veth pair between an endpoint (host NIC or storage port) and the switch."""

    near: LinkEnd  # the host's NIC or the storage port
    switch: LinkEnd  # its peer, a port of the bridge
    address: str  # the near end's address with prefix length, e.g. "198.18.0.10/24"


class Names:
    """Every name and address of one lab, derived from its spec alone."""

    def __init__(self, spec: LabSpec):
        self.spec = spec
        self.prefix = spec.prefix

    # namespaces
    @property
    def switch_ns(self) -> str:
        """The switch namespace (holds the bridge)."""
        return f"{self.prefix}-sw"

    @property
    def storage_ns(self) -> str:
        """The storage server's namespace."""
        return f"{self.prefix}-st"

    def host_ns(self, host: int) -> str:
        """Load host ``host``'s namespace."""
        return f"{self.prefix}-h{host}"

    def namespaces(self) -> list[str]:
        """All namespaces, switch first."""
        return [self.switch_ns, self.storage_ns] + [self.host_ns(h) for h in range(self.spec.hosts)]

    @property
    def bridge(self) -> str:
        """The bridge in the switch namespace."""
        return f"{self.prefix}br"

    # addresses
    def storage_address(self, port: int) -> str:
        """Storage port ``port``'s address (no prefix length)."""
        return str(LAB_NETWORK.network_address + port * 256 + 1)

    def host_address(self, host: int, nic: int) -> str:
        """The address of host ``host``'s NIC ``nic`` (no prefix length)."""
        port = self.spec.port_of(host, nic)
        return str(LAB_NETWORK.network_address + port * 256 + 10 + host)

    def server_guest_address(self, port: int) -> str:
        """The address of the storage server guest's data NIC on storage port ``port``'s subnet (no prefix)."""
        return str(LAB_NETWORK.network_address + port * 256 + 2)

    def load_guest_address(self, host: int, slot: int) -> str:
        """The address of load guest ``slot`` (numbered across the run) on the subnet of host ``host``'s first NIC."""
        if not 0 <= slot < GUEST_SLOTS:
            raise ValueError(f"load guest {slot}: a lab has addresses for load guests 0-{GUEST_SLOTS - 1}")
        return str(LAB_NETWORK.network_address + self.spec.port_of(host, 0) * 256 + GUEST_BASE + slot)

    def tap(self, role: str) -> str:
        """The tap interface of a guest's data NIC (``role``: "st" for the storage server, "g0"… for load guests)."""
        return f"{self.prefix}k{role}"

    def host_addresses(self, host: int) -> list[str]:
        """Every address host ``host`` may use (one per NIC)."""
        return [self.host_address(host, n) for n in range(self.spec.nics_per_host)]

    # links
    def storage_link(self, port: int) -> Link:
        """The link of storage port ``port``."""
        name = f"{self.prefix}s{port}"
        return Link(
            LinkEnd(self.storage_ns, name),
            LinkEnd(self.switch_ns, name + "b"),
            f"{self.storage_address(port)}/{SUBNET_PREFIXLEN}",
        )

    def host_link(self, host: int, nic: int) -> Link:
        """The link of host ``host``'s NIC ``nic``."""
        name = f"{self.prefix}h{host}n{nic}"
        return Link(
            LinkEnd(self.host_ns(host), name),
            LinkEnd(self.switch_ns, name + "b"),
            f"{self.host_address(host, nic)}/{SUBNET_PREFIXLEN}",
        )

    def links(self) -> list[Link]:
        """Every link: storage ports first, then host NICs."""
        out = [self.storage_link(p) for p in range(self.spec.storage_ports)]
        for h in range(self.spec.hosts):
            out += [self.host_link(h, n) for n in range(self.spec.nics_per_host)]
        return out

    # pool and servers
    @property
    def pool_image(self) -> str:
        """File name of the pool's backing file (found by name by ``down_all``)."""
        return f"{self.prefix}-pool.img"

    @property
    def mount_dir(self) -> str:
        """Directory name (in the workdir) of the shared mount that holds the pool's mounts."""
        return f"{self.prefix}-mnt"

    @property
    def pool_mount(self) -> str:
        """Directory name of the pool's mount point inside the workdir."""
        return f"{self.prefix}-pool"

    @property
    def device_mount(self) -> str:
        """Directory name (in the shared mount directory) of the device model's FUSE mount."""
        return f"{self.prefix}-dev"

    @property
    def device_disk(self) -> str:
        """The one file the device model serves (the loop device's backing file; found by name by ``down_all``)."""
        return f"{self.prefix}-disk"

    @property
    def nfs_mount(self) -> str:
        """Directory name of the NFS volume's own mount point inside the workdir."""
        return f"{self.prefix}-pool-nfs"

    @property
    def knfsd_mount(self) -> str:
        """Directory name (in the shared mount directory) of the knfsd volume's ext4, while this host mounts it."""
        return f"{self.prefix}-pool-knfsd"

    @property
    def knfsd_image(self) -> str:
        """File name of the knfsd volume's ext4 image (the storage server guest's disk; found by name by
        ``down_all``)."""
        return f"{self.prefix}-knfsd.img"

    @property
    def iqn(self) -> str:
        """The iSCSI target name of the lab's export."""
        return f"iqn.2024-01.org.protolab:{self.prefix}.iscsi"

    @property
    def nqn(self) -> str:
        """The NVMe subsystem name of the lab's NVMe/TCP export."""
        return f"nqn.2024-01.org.protolab:{self.prefix}.nvme"

    @property
    def lio_iqn(self) -> str:
        """The iSCSI target name of the storage server guest's LIO export (a kernel data path)."""
        return f"iqn.2024-01.org.protolab:{self.prefix}.lio"

    def initiator_iqn(self, host: int, vm: int = 0, config: int = 0) -> str:
        """The initiator name of host ``host``'s load guest ``vm`` for configuration number ``config`` (LIO's ACL
        admits it by this name). Each configuration's guest has its own: iscsistart's sessions have fixed ISIDs, and
        a second login with the same name and ISID reinstates the session, ending the first guest's."""
        return f"iqn.2024-01.org.protolab:{self.prefix}.h{host}v{vm}c{config}"

    def host_nqn(self, host: int, vm: int = 0, config: int = 0) -> str:
        """The host NQN of host ``host``'s load guest ``vm`` for configuration number ``config`` (the server guest
        admits it by this name)."""
        return f"nqn.2024-01.org.protolab:{self.prefix}.h{host}v{vm}c{config}"


def check_in_lab_range(address: str) -> None:
    """Refuse any address outside 198.18.0.0/15: lab traffic never leaves the benchmark range."""
    if IPv4Address(address) not in LAB_NETWORK:
        raise ValueError(f"{address} is outside the lab range {LAB_NETWORK}")
