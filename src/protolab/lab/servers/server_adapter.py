"""What a server adapter is: how the lab starts a storage server for one protocol's export and how hosts reach it.

One adapter per server (plan.servers names them: tgt, ganesha, nbdkit, and the kernel servers of the storage
server guest, lio, nvmet, knfsd). The lab (lab.lab) loops over the adapters of the protocols it serves and
never names a protocol or a server; the registry is lab.servers.ADAPTERS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...conventions import DATA_FILE
from ...plan.topology import LabSpec
from ...proc import Runner
from ..names import Names
from ..pool import Pool
from ..procs import Processes

UNDESCRIBED = "unknown: this server's cache is not described"


@dataclass(frozen=True)
class Serving:
    """One protocol's export as a server adapter is given it: the lab's parts, the export's volume, who is admitted."""

    runner: Runner
    procs: Processes
    names: Names
    spec: LabSpec
    workdir: Path
    mounts: Path  # the lab's mount points' directory
    pool: Pool
    protocol: str
    granted: list[str]  # the addresses (load hosts' NICs) the export admits

    @property
    def volume(self) -> Path:
        """The export's btrfs volume (its data file is DATA_FILE in it)."""
        return self.pool.volume(self.protocol)

    @property
    def modelled(self) -> bool:
        """True when the pool has a device model: servers go past the page cache where they can."""
        return not self.spec.device.is_ram


@dataclass(frozen=True)
class Adapter:
    """A storage server of the lab. The defaults are a kernel server's: the storage server guest serves it
    (vm.kernelpaths), so the lab starts nothing and the data file is the volume's."""

    name: str
    cache: str = UNDESCRIBED  # what sits between the server and the device model (the report's Environment)
    workdir_files: tuple[str, ...] = ()  # what it writes in the lab's work directory besides its logs
    write_back: str = ""  # what it does with stable writes under a write-back device model ('': nothing special)
    own_volume: bool = False  # it serves the pool's knfsd volume (an ext4 image, lab.fsvolume), not its data file
    tools: tuple[tuple[str, str, str], ...] = ()  # (program, Debian package, what for): `protolab doctor` checks
    guests: bool = False  # its clients are the load guests' kernels: it admits their addresses too
    processes: tuple[str, ...] = ()  # the recorded processes that are the server (lab.fault_controls kills them)

    def start(self, s: Serving) -> None:
        """Start the server in the storage namespace for ``s``'s export (a kernel server: nothing here)."""

    def restart(self, s: Serving) -> None:
        """Start ``processes`` again after a fault killed them, as at lab up, over what ``start`` made once and
        is still there (configuration, access rules, helpers); returns once the server listens."""
        self.start(s)

    def data_file(self, names: Names, mounts: Path, pool: Pool, protocol: str) -> Path:
        """The export's data file as the lab writes it."""
        return pool.volume(protocol) / DATA_FILE

    def target(self, names: Names) -> str | None:
        """The export's name its initiators ask for (a subsystem NQN, a target IQN; None: a path)."""
        return None

    def credentials(self, workdir: Path) -> tuple[str, str] | None:
        """The user and password its clients log in with (made for each lab, kept in ``workdir``); None: none."""
        return None

    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        """How a load host reaches the export through storage port ``port``."""
        raise NotImplementedError(f"server {self.name} has no URL")
