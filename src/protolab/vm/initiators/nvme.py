"""The load guest's nvme-tcp: it connects to the storage server guest's subsystem (/dev/nvme-fabrics) with as many
I/O queues as it has vCPUs, as its own host NQN; fio runs on the namespace's block device."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ProtolabError
from ...lab.names import Names
from ...lab.servers.words import check_endpoint, check_nqn
from ...plan import attach
from ...plan.model import Configuration
from ...plan.protocols import PROTOCOLS
from .initiator_adapter import Attachment, Initiator

PORT = PROTOCOLS["nvme-tcp"].port


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
        check_endpoint(self.address, self.port)
        if not 1 <= self.queues <= attach.MAX_QUEUES:
            raise ProtolabError(f"nvme-tcp queues {self.queues}: give 1-{attach.MAX_QUEUES}")
        check_nqn(self.nqn, "subsystem NQN")
        check_nqn(self.hostnqn, "host NQN")
        return [f"pl.nvme={self.address},{self.port},{self.nqn},{self.queues},{self.hostnqn}"]


@dataclass(frozen=True)
class NvmeInitiator(Initiator):
    def identity(self, names: Names, host: int, vm: int, config: int, slot: int) -> str:
        return names.host_nqn(host, vm, config)

    def words(self, a: Attachment) -> list[str]:
        return NvmeConnect(a.address, PORT, a.target or "", a.queues, a.identity).kernel_args()

    def label(self, c: Configuration, queues: int) -> str:
        return f"{queues} I/O queue(s)"


INITIATOR = NvmeInitiator("nvme-tcp")
