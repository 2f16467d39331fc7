"""The knfsd volume: an ext4 file system in the pool, for the server that exports a file system from its own kernel
(knfsd in the storage server guest, vm.kernelpaths).

A subvolume of the pool holds one file, the ext4 image (``PREFIX-knfsd.img``), made here with the data file
``protolab.dat`` in it at the export's size. The image is the storage server guest's disk; its kernel mounts it
and knfsd exports it. Snapshot and restore treat it like every other volume's file (pool.Pool), so it restores to
the same bytes between cells while the guest has unmounted it (run.vmbed's restore tells the guest to let go and to
take it back: vm.guestcpu's verbs).

One kernel mounts the file system at a time. Until the server guest takes it, this host mounts it (a loop device,
recorded), so that protolab's prepare and initialise write the data file from the storage side, as for
lab:local; ``release()`` unmounts it before the snapshot and before the guest boots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..conventions import DATA_FILE
from ..plan.servers import fs_image_bytes
from ..proc import Runner
from .pool import TIMEOUT, Pool
from .record import Record, Resource

NAME = "ext4-volume"  # the pool volume's name
JOURNAL_MIB = 16


@dataclass
class FsVolume:
    """The knfsd volume: its image in the pool and, while this host holds it, its mount."""

    runner: Runner
    record: Record
    pool: Pool
    mount: Path  # where this host mounts the image while it holds it
    image_name: str
    size: int  # the data file's
    _held: list[Resource] = field(default_factory=list)  # the loop and the mount, while this host holds the image

    @property
    def image(self) -> Path:
        return self.pool.volume(NAME) / self.image_name

    @property
    def data(self) -> Path:
        """The data file, as this host sees it while it holds the image."""
        return self.mount / DATA_FILE

    @property
    def held(self) -> bool:
        return bool(self._held)

    def _run(self, argv: list[str]) -> None:
        self.runner.run(argv, check=True, timeout=TIMEOUT)

    def create(self) -> None:
        """The volume, its ext4 image (no lazy initialisation: the guest's kernel writes nothing behind the
        snapshot's back), mounted here, with the data file at its size (unwritten extents: prepare fills them)."""
        self.pool.add_volume(NAME, fs_image_bytes(self.size), self.image_name)
        self._run(["mkfs.ext4", "-q", "-F", "-m", "0", "-N", "64", "-J", f"size={JOURNAL_MIB}", "-L", "protolab",
                   "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", str(self.image)])
        self.hold()
        self._run(["fallocate", "-l", str(self.size), str(self.data)])

    def hold(self) -> None:
        """Mount the image on this host (recorded first: teardown unmounts it and detaches its loop)."""
        if self._held:
            return
        loop = self.record.add("loop", str(self.image))
        dev = self.runner.run(["losetup", "--find", "--show", str(self.image)], check=True,
                              timeout=TIMEOUT).stdout.strip()
        self._held.append(self.record.update(loop, device=dev))
        self._held.append(self.record.add("mount", str(self.mount)))
        self.mount.mkdir(parents=True, exist_ok=True)
        self._run(["mount", "-t", "ext4", "-o", "noatime", dev, str(self.mount)])

    def release(self) -> None:
        """Unmount the image here and detach its loop device (its last block written); a no-op when not held."""
        if not self._held:
            return
        loop, mount = self._held
        self._run(["umount", str(self.mount)])
        self.record.drop(mount)
        self.mount.rmdir()
        self._run(["losetup", "--detach", loop.extra["device"]])
        self.record.drop(loop)
        self._held.clear()
