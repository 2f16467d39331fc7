"""The load guest's NFS client: it mounts the server's /export on /mnt/pl with the configuration's mount options
(version, TCP connections, bytes per READ and WRITE; the kernel's own where not given) and fio runs on the data
file there. The server admits guests by address."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ProtolabError
from ...lab.servers.words import check_address
from ...plan import attach
from ...plan.model import Configuration
from .initiator_adapter import MOUNT, Attachment, Initiator


@dataclass(frozen=True)
class NfsClient:
    """A load guest's NFS mount of the server guest's /export (on /mnt/pl), with the plan's mount options."""

    address: str
    mount: attach.NfsMount = field(default_factory=attach.NfsMount)

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh); 0: the kernel's size."""
        check_address(self.address)
        m = self.mount
        if m.version not in attach.NFS_VERSIONS:
            raise ProtolabError(f"NFS version {m.version!r}: one of {', '.join(attach.NFS_VERSIONS)}")
        if not 1 <= m.nconnect <= attach.MAX_NCONNECT:
            raise ProtolabError(f"NFS nconnect {m.nconnect}: give 1-{attach.MAX_NCONNECT}")
        for size in (m.rsize, m.wsize):
            if size is not None and size not in attach.RW_SIZES:
                raise ProtolabError(f"NFS rsize or wsize {size}: give a power of two from 4096 to 1048576")
        return [f"pl.nfs={self.address},{m.version},{m.nconnect},{m.rsize or 0},{m.wsize or 0}"]


@dataclass(frozen=True)
class NfsInitiator(Initiator):
    def words(self, a: Attachment) -> list[str]:
        return NfsClient(a.address, a.configuration.nfs or attach.NfsMount()).kernel_args()

    def label(self, c: Configuration, queues: int) -> str:
        return f"mounted on {MOUNT} with {(c.nfs or attach.NfsMount()).options()}"


INITIATOR = NfsInitiator("nfs", by_address=True, mounted=True, console_line="protolab-guest: nfs ")
