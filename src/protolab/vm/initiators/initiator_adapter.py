"""What a guest initiator adapter is: how a load guest's kernel attaches a lab export and where fio finds it.

One module per kernel initiator (nvme-tcp, iscsi_tcp, the NFS client), registered by protocol in
vm.initiators.INITIATORS. The VM testbed (run.vmbed) and the guests (vm.kernelpaths) loop over them and never name
a protocol. Each value reaches the guest's kernel command line only through a word its module checks first.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lab.names import Names
from ...plan.model import Configuration

#: where a load guest mounts a file export (NFS, SMB), and fio's data file in it
MOUNT = "/mnt/pl"


@dataclass(frozen=True)
class Attachment:
    """What one load guest attaches: the server's address, the export's name there (subsystem NQN, target IQN, a
    share; None for a path), how the guest presents itself (host NQN, initiator IQN, its address), the
    configuration's own settings (sessions, NFS mount options), and the lab's credentials where its server asks."""

    address: str
    target: str | None
    identity: str
    configuration: Configuration
    queues: int = 1
    credentials: tuple[str, str] | None = None  # the user and password the server's clients log in with


@dataclass(frozen=True)
class Initiator:
    """A kernel initiator of the load guests. ``by_address``: the server admits guests by their address (every
    address an admitted host's guests can have), else by ``identity``'s name; ``mounted``: fio runs on the data file
    in the guest's mount (``console_line`` printed once mounted), else on the block devices that appeared."""

    protocol: str
    by_address: bool = False
    mounted: bool = False
    console_line: str = ""

    def identity(self, names: Names, host: int, vm: int, config: int, slot: int) -> str:
        """How load guest (``host``, ``vm``, ``config``), booted as ``slot``, presents itself to the server."""
        return names.load_guest_address(host, slot)

    def words(self, a: Attachment) -> list[str]:
        """The load guest's kernel command line word attaching ``a`` (see scripts/build-guest.sh)."""
        raise NotImplementedError

    def label(self, c: Configuration, queues: int) -> str:
        """How a configuration's guests attach, for people: '2 session(s)'."""
        return ""
