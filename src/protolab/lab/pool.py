"""The pool: btrfs on a loop file, a subvolume per export, one data file each, snapshot and restore.

Restore clones each file back from the read-only snapshot into the *same* inode
(``cp --reflink=always``), so servers that hold the file open serve the restored
bytes without a restart, and btrfs drops the stale page cache of the clone range.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..conventions import DATA_FILE  # noqa: F401  (re-exported for lab.py)
from ..errors import ProtolabError
from ..plan.storage import StorageSpec
from ..proc import Runner
from ..trust import open_nofollow
from .device import BlockDevice, Overhead
from .record import Record

TIMEOUT = 120.0
SNAPSHOTS = ".snapshots"


@dataclass
class Pool:
    """A btrfs pool on a loop file in the lab's workdir."""

    runner: Runner
    record: Record
    image: Path
    mount: Path
    size: int
    cow: bool = False
    device: BlockDevice | None = None  # the device model under the loop device; None: ram (today's pool)
    overhead: Overhead | None = None  # the stack's own time per request, measured at creation and each snapshot
    # a swept model's overheads, measured once per model (the stack's time depends on the hold: lab.device)
    overheads: dict[StorageSpec, Overhead] = field(default_factory=dict)

    def _run(self, argv: list[str], check: bool = True):
        return self.runner.run(argv, check=check, timeout=TIMEOUT)

    def create(self) -> None:
        """Shared mount directory → sparse image → loop device → btrfs → mounted (each recorded first).

        Every ``ip netns exec`` (ours or another lab's) copies the mount table as a slave.
        Mounts propagate through their *parent*, so the pool sits in a directory bind-mounted
        onto itself and made shared: our umount then reaches every copy, and no namespace
        created later can pin the loop device after teardown.
        """
        top = self.mount.parent
        self.record.add("mount", str(top))
        top.mkdir(parents=True, exist_ok=True)
        self._run(["mount", "--bind", str(top), str(top)])
        self._run(["mount", "--make-shared", str(top)])
        self.record.add("file", str(self.image))
        self.image.parent.mkdir(parents=True, exist_ok=True)
        # a new file, never one that was there (a planted symlink would make losetup and mkfs destroy its target)
        with os.fdopen(open_nofollow(self.image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.truncate(self.size)
        if self.device is not None:
            self.device.start()
            dev = self._loop(self.device.served, direct=True)
        else:
            dev = self._loop(self.image)
        # no discard: the device model's file has no hole punching, and ram's pool never needed it
        self._run(["mkfs.btrfs", "-q", "-f", "--nodiscard", dev])
        self.record.add("mount", str(self.mount))
        self.mount.mkdir(parents=True, exist_ok=True)
        self._run(["mount", "-t", "btrfs", "-o", self._options, dev, str(self.mount)])
        self.calibrate()

    @property
    def _options(self) -> str:
        return "nodiscard" if self.device is not None else "defaults"

    def _loop(self, backing: Path, direct: bool = False) -> str:
        loop = self.record.add("loop", str(backing))
        dev = self._run(["losetup", "--find", "--show", *(["--direct-io=on"] if direct else []),
                         str(backing)]).stdout.strip()
        self.record.update(loop, device=dev)
        return dev

    def calibrate(self) -> None:
        """With a device model: measure the stack's overhead (lab.device) and give it to the model — btrfs, the
        loop device (direct I/O: no page cache between it and the model) and FUSE, as every path's I/O meets them."""
        if self.device is None:
            return
        self.overhead = self.device.calibrate(self.mount / ".protolab-probe", not self.cow, self.overhead)
        w = self.overhead.write_us
        self.record.set_state(device_overhead_us=round(self.overhead.read_us, 1),
                              device_write_overhead_us=None if w is None else round(w, 1))

    def set_model(self, spec: StorageSpec) -> None:
        """Serve the device model ``spec`` from now on (a swept service time), without re-provisioning: the pool
        quiesced (its writes on the device), the daemon told, and the stack's overhead at this model measured the
        first time it is served and handed back to the daemon each later time."""
        if self.device is None:
            raise ProtolabError("lab: the pool has no device model to change (model = 'ram')")
        self._run(["sync", "-f", str(self.mount)])
        self.device.set_model(spec)
        known = self.overheads.get(spec)
        if known is None:
            self.overhead = None  # another hold time: the last model's overhead is no guess for it
            self.calibrate()
            assert self.overhead is not None
            self.overheads[spec] = self.overhead
        else:
            self.overhead = known
            self.device.hand_overhead(known)
        self.record.set_state(device_service_us=spec.service_us, device_overhead_us=round(self.overhead.read_us, 1),
                              device_overheads_us={f"{k.service_us:g}": round(v.read_us, 1)
                                                   for k, v in self.overheads.items()})

    def volume(self, name: str) -> Path:
        """The path of volume ``name``."""
        return self.mount / name

    def add_volume(self, name: str, data_size: int, file: str = DATA_FILE) -> Path:
        """A subvolume holding one preallocated data file (``file``); returns the file's path.

        Without ``cow`` the subvolume gets the No_COW attribute while still empty, so
        the data file inherits it (btrfs only honours +C on empty files).
        """
        vol = self.volume(name)
        self._run(["btrfs", "-q", "subvolume", "create", str(vol)])
        if not self.cow:
            self._run(["chattr", "+C", str(vol)])
        path = vol / file
        self._run(["fallocate", "-l", str(data_size), str(path)])
        return path

    def mount_volume(self, name: str, where: Path) -> Path:
        """Mount volume ``name`` on its own mount point (ganesha's VFS cannot export a nested subvolume)."""
        self.record.add("mount", str(where))
        where.mkdir(parents=True, exist_ok=True)
        dev = self.record.find("loop")[0].extra["device"]
        self._run(["mount", "-t", "btrfs", "-o", f"subvol={name},{self._options}", dev, str(where)])
        return where

    def volumes(self) -> list[str]:
        """Names of the pool's volumes."""
        return sorted(p.name for p in self.mount.iterdir() if p.is_dir() and p.name != SNAPSHOTS)

    def snapshot(self) -> None:
        """A read-only snapshot of every volume (replacing an earlier one); the device model calibrated again."""
        snaps = self.mount / SNAPSHOTS
        snaps.mkdir(exist_ok=True)
        for name in self.volumes():
            snap = snaps / name
            if snap.exists():
                self._run(["btrfs", "-q", "subvolume", "delete", str(snap)])
            self._run(["btrfs", "-q", "subvolume", "snapshot", "-r", str(self.volume(name)), str(snap)])
        self._run(["sync", "-f", str(self.mount)])
        self.overheads.clear()
        self.calibrate()  # again: the lab's first seconds are past

    def has_snapshot(self) -> bool:
        """Whether a snapshot has been taken."""
        return (self.mount / SNAPSHOTS).is_dir() and any((self.mount / SNAPSHOTS).iterdir())

    def restore(self) -> None:
        """Bring every volume back to the snapshot, in place; files made since are removed."""
        snaps = self.mount / SNAPSHOTS
        if not self.has_snapshot():
            raise ProtolabError("lab restore: no snapshot has been taken; call snapshot() first")
        for snap in sorted(p for p in snaps.iterdir() if p.is_dir()):
            vol = self.volume(snap.name)
            kept = {p.name for p in snap.iterdir()}
            for extra in vol.iterdir():
                if extra.name not in kept and extra.is_file():
                    extra.unlink()
            for src in sorted(snap.iterdir()):
                if src.is_file():
                    self._run(["cp", "--reflink=always", "--sparse=auto", str(src), str(vol / src.name)])
        self._run(["sync", "-f", str(self.mount)])


def file_size(path: Path) -> int:
    """Size of a data file in bytes."""
    return os.stat(path).st_size
