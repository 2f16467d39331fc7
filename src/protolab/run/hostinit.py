"""What a host initiator adapter is: how a user's host (or a guest reached over ssh) attaches one protocol's
target with its kernel, detaches it by identity, and what the report sums its kernel's account up by.

One module per protocol (run.attach_iscsi, attach_nfs, attach_nvme, attach_smb), each an `HostInitiator` (a
`MountedInitiator` for a file export or share) registered by its protocol in run.hostinitiators. run.attaching
and `protolab doctor`'s host checks (hostcheck) loop over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .attach_sh import check_disks, check_mount, disk_identities, mount_identities, unmount


@dataclass(frozen=True)
class HostInitiator:
    """A kernel initiator on a load host: its tool and kernel module (and the tool's Debian package), for the host
    checks; ``mounted``: the target is a data file in a mount (its identity the mount's st_dev), not disks."""

    protocol: str
    tool: str
    module: str
    package: str
    mounted: bool = False

    def attach(self, spec: Any, mount: str, run_key: str) -> str:
        """The attach script (run.attach_sh's conventions: 'device', 'ident', 'found', 'kernel', 'error' lines)."""
        raise NotImplementedError

    def detach(self, spec: Any, mount: str, ids: tuple[str, ...] | None, run_key: str) -> str:
        """The detach script: only what this run attached (``ids``: what it connected, when known)."""
        raise NotImplementedError

    def check(self, idents: tuple[str, ...]) -> str:
        """The check before each window: the attached devices still the disks recorded."""
        return check_disks(idents)

    def identities(self, lines: list[str], devices: tuple[str, ...]) -> tuple[str, ...] | str:
        """What the checks compare: each disk's identity; or why there is none."""
        return disk_identities(lines, devices)

    def storage(self, spec: Any) -> tuple:
        """The storage an attach reaches, whatever its options (a host holds one attach of it at a time)."""
        raise NotImplementedError

    def summary(self, kernel: str) -> list[str]:
        """The kernel's account in a line per session, controller or mount (the report's short form)."""
        return [ln for ln in kernel.splitlines() if ln.strip()]

    def notes(self, spec: Any, kernel: str) -> tuple[str, ...]:
        """What the kernel gave differently from what the plan asked (one line each)."""
        return ()


@dataclass(frozen=True)
class MountedInitiator(HostInitiator):
    """A kernel client that mounts a file export or share (run.attach_sh.mounted_attach): the target is its data file,
    its identity the mount's st_dev; detach unmounts this run's mount point alone."""

    mounted: bool = True

    def detach(self, spec: Any, mount: str, ids: tuple[str, ...] | None, run_key: str) -> str:
        return unmount(mount)

    def check(self, idents: tuple[str, ...]) -> str:
        """The data file still a plain file on this run's nosymfollow mount."""
        return check_mount(idents)

    def identities(self, lines: list[str], devices: tuple[str, ...]) -> tuple[str, ...] | str:
        """The mount's st_dev."""
        return mount_identities(lines)
