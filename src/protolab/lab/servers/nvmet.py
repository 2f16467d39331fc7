"""nvmet-tcp in the storage server guest: one subsystem with the pool's NVMe/TCP volume as its namespace, access
by host NQN, configured through configfs by the guest's init (scripts/build-guest.sh, pl.nvmet=)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...errors import ProtolabError
from ...plan.protocols import PROTOCOLS
from ..names import Names
from .kernel import KernelAdapter
from .words import check_endpoint, check_nqn, check_serial

PORT = PROTOCOLS["nvme-tcp"].port


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
        check_endpoint(self.address, self.port)
        check_serial(self.disk)
        check_nqn(self.nqn, "subsystem NQN")
        if not self.hosts:
            raise ProtolabError("nvmet-tcp: no host may connect (no load host is granted the export)")
        hosts = [check_nqn(h, "host NQN") for h in self.hosts]
        return [f"pl.nvmet={self.address},{self.port},{self.nqn},{'+'.join(hosts)},{self.disk}"]


@dataclass(frozen=True)
class NvmetAdapter(KernelAdapter):
    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        # the kernel data path: the storage server guest's nvmet-tcp (vm.kernelpaths), not a URL fio reaches
        return f"{protocol}://{names.server_guest_address(port)}:{PORT}/{names.nqn}"

    def target(self, names: Names) -> str | None:
        return names.nqn

    def guest_words(self, names: Names, address: str, admitted: Sequence[str], disk: str | None) -> list[str]:
        return NvmeTarget(address, PORT, names.nqn, tuple(admitted), disk or "pl0").kernel_args()


ADAPTER = NvmetAdapter("nvmet")
