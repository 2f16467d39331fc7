"""A target's kernel attach on a load host (plan.attach), and its detach: the adapter for iscsiadm, mount.nfs,
nvme-cli and mount.cifs.

Each attach, detach and check is one fixed shell script (one module per protocol: run.attach_iscsi, attach_nfs,
attach_nvme, attach_smb) run through the host's shell (run.hostshell: this machine, or ssh). Plan values reach it as
shell variables, quoted with shlex after plan.attach checked them. The attach script

- refuses (exit 3) when the host already has that target (a session to the IQN, a controller of the NQN, a
  mount of the export): protolab detaches only what it attached, so it never attaches over the user's own;
- attaches (iscsiadm through the run's own open-iscsi iface with node.session.nr_sessions; mount.nfs with
  nosuid,nodev,noexec, then nosymfollow, on a root-only mount point under /run/protolab-attach; nvme connect with
  its I/O queues, the controllers it made — by identity — written beside the mount points for a detach that was
  not told them);
- finds the result by its identifiers, never by guessing a name: the SCSI disks of the sessions whose
  targetname is the IQN and whose LUN is the plan's (sysfs), the namespace of the subsystem whose subsysnqn is the
  NQN, the mount point it made;
- prints what the kernel reports of it (``iscsiadm -m session -r SID -P 3``, the line of /proc/mounts, the
  controllers' sysfs and ``nvme list-subsys``) and what the device or file holds (blkid's signature, or the
  data file's size when protolab's marker is not beside it) for the overwrite rule;
- prints each device's identity (run.attach_sh), or the NFS mount's st_dev, which the check before every window
  compares: a device name that now names another disk, or a data file swapped for a link, stops the run.

Its output is lines of ``device PATH``, ``kernel TEXT``, ``found TEXT``, ``id LINE`` (an NVMe controller),
``ident PATH LINE`` and ``error TEXT``; a detach's ``note TEXT`` says what it left alone.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import TargetError, ToolError
from ..plan.attach import Attach
from ..proc import Runner
from .attach_sh import ALREADY, ATTACH_DIR
from .hostinitiators import host_initiator
from .hostshell import HostShell, Unreachable

TIMEOUT_S = 120.0
CHECK_TIMEOUT_S = 60.0
DETACH_TRIES, DETACH_RETRY_S = 3, 2.0
MAX_KERNEL_TEXT = 64 * 1024


@dataclass(frozen=True)
class Attached:
    """One target attached on one host: its devices (or the data file in its mount), what the kernel reports."""

    host: str
    target: str
    protocol: str
    asked: str  # the attach as the plan asks it (Attach.describe)
    devices: tuple[str, ...]
    kernel: str
    found: tuple[str, ...] = field(default_factory=tuple)
    ids: tuple[str, ...] = ()  # what the detach must touch: the NVMe controllers it connected, by identity
    idents: tuple[str, ...] = ()  # "PATH IDENTITY" per device (or the NFS data file), checked before each window

    def record(self) -> dict[str, Any]:
        """What the run directory keeps (the manifest's ``attached``)."""
        return {"host": self.host, "target": self.target, "protocol": self.protocol, "asked": self.asked,
                "devices": list(self.devices), "kernel": self.kernel[:MAX_KERNEL_TEXT],
                "summary": summary(self.protocol, self.kernel), "found": list(self.found),
                "identity": list(self.idents)}


def summary(protocol: str, kernel: str) -> list[str]:
    """The kernel's account in a line per session, controller or mount (the report's short form)."""
    return host_initiator(protocol).summary(kernel)


def mount_point(run_key: str, host: str, target: str) -> str:
    """The mount point of a (run, host, target) for a mounted target: under ATTACH_DIR, a name of no plan text."""
    return f"{ATTACH_DIR}/{hashlib.sha256(f'{run_key}|{host}|{target}'.encode()).hexdigest()[:16]}"


def attach_script(a: Attach, mount: str, run_key: str = "") -> str:
    return host_initiator(a.protocol).attach(a.spec, mount, run_key)


def detach_script(a: Attach, mount: str, ids: tuple[str, ...] | None = None, run_key: str = "") -> str:
    return host_initiator(a.protocol).detach(a.spec, mount, ids, run_key)


def check_script(a: Attach, attached: "Attached") -> str:
    """The check before a window: the attached devices still the disks recorded, or a mounted target's data file a
    plain file on this run's nosymfollow mount."""
    return host_initiator(a.protocol).check(attached.idents)


def storage_of(a: Attach) -> tuple:
    """The storage an attach reaches, whatever its options: one IQN (a host holds one login to it; attach refuses
    a second), one NQN, one server's export."""
    return host_initiator(a.protocol).storage(a.spec)


def same_storage(a: Attach | None, b: Attach | None) -> bool:
    """Whether two attaches reach the same storage connection (one host holds one attach of it at a time)."""
    return a is not None and b is not None and storage_of(a)[:2] == storage_of(b)[:2]


class AlreadyAttached(ToolError):
    """The host has the target already (its own): nothing was attached, nothing is to be detached."""


def _lines(output: str, kind: str) -> list[str]:
    return [ln[len(kind) + 1:] for ln in output.splitlines() if ln.startswith(kind + " ")]


@dataclass
class Attacher:
    """Attaches, checks and detaches targets on hosts through their shells (``run_key``: the run's own name for
    what it attaches, run.attachments.run_key; ``netns``: where ssh runs, for tests)."""

    runner: Runner
    run_key: str
    netns: str | None = None
    timeout: float = TIMEOUT_S
    sleep: Callable[[float], None] = time.sleep

    def attach(self, shell: HostShell, target: str, a: Attach, *, allow_overwrite: bool) -> Attached:
        """Attach ``a`` on ``shell``'s host as target ``target``; ToolError (one line) when it cannot, TargetError
        when the device or file holds data the plan did not opt in to overwrite. Whatever it attached before
        failing is detached again."""
        mount = mount_point(self.run_key, shell.name, target)
        done = shell.run(self.runner, attach_script(a, mount, self.run_key), timeout=self.timeout, netns=self.netns)
        errors = _lines(done.stdout, "error")
        why = errors[-1] if errors else done.one_line_error()
        if done.returncode == ALREADY:  # the host's own: nothing of it is touched
            raise AlreadyAttached(f"host {shell.name}: target {target} ({a.describe()}): {why}; protolab attaches and "
                            "detaches only its own: detach it there first, or give its device as url")
        devices, ids = tuple(_lines(done.stdout, "device")), tuple(_lines(done.stdout, "id"))
        idents = host_initiator(a.protocol).identities(_lines(done.stdout, "ident"), devices) if devices else ()
        if isinstance(idents, str) and done.returncode == 0:  # a device with nothing to check it by is not used
            done, why = None, f"cannot tell the device's identity before each window: {idents}"
        if done is None or done.returncode != 0 or not devices:
            self._undo(shell, target, a, ids)
            raise ToolError(f"host {shell.name}: target {target} ({a.describe()}): {why}")
        assert not isinstance(idents, str)
        found = tuple(_lines(done.stdout, "found"))
        kernel = "\n".join(_lines(done.stdout, "kernel"))
        attached = Attached(shell.name, target, a.protocol, a.describe(), devices, kernel,
                            found + host_initiator(a.protocol).notes(a.spec, kernel), ids, idents)
        mounted = host_initiator(a.protocol).mounted
        held = [f for f in found if mounted or not f.endswith(" no signature")]
        if held and not allow_overwrite:
            self._undo(shell, target, a, attached.ids)
            raise TargetError(f"host {shell.name}: target {target}: {held[0]}; add allow_overwrite = true to the "
                              "target if its contents may be destroyed")
        return attached

    def check(self, shell: HostShell, attached: Attached, a: Attach) -> None:
        """Before a window (or protolab's own writes): ToolError in one line when a device of ``attached`` now
        names another disk, or its NFS data file is no longer a plain file on this run's mount."""
        done = shell.run(self.runner, check_script(a, attached), timeout=CHECK_TIMEOUT_S, netns=self.netns)
        if done.returncode != 0:
            errors = _lines(done.stdout, "error")
            why = errors[0] if errors else done.one_line_error()
            raise ToolError(f"host {shell.name}: target {attached.target}: {why}; the run stops here, before its "
                            "next window: nothing more is written to it")

    def _undo(self, shell: HostShell, target: str, a: Attach, ids: tuple[str, ...] | None = None) -> None:
        try:
            self.detach(shell, target, a, ids or None)
        except ToolError:
            pass  # the error that brought us here is the one to show; detach names itself when run again

    def detach(self, shell: HostShell, target: str, a: Attach, ids: tuple[str, ...] | None = None) -> list[str]:
        """Detach ``a`` from the host (nothing to do when it is not attached; ``ids``: the NVMe controllers it
        connected, when known); what it left alone as not this run's (one line each). ToolError naming the host
        and the exact command to run there when it cannot."""
        script = detach_script(a, mount_point(self.run_key, shell.name, target), ids, self.run_key)
        for attempt in range(DETACH_TRIES):
            try:
                done = shell.run(self.runner, script, timeout=self.timeout, netns=self.netns)
                break
            except Unreachable as e:  # e.g. a signal ended the attach's ssh a moment ago and the host dropped this one
                if attempt + 1 == DETACH_TRIES or not e.why.startswith("ssh failed"):  # a silent host: not waited for
                    raise ToolError(f"{e}; then detach target {target} there: {shell.by_hand(script)}") from None
                self.sleep(DETACH_RETRY_S)
        if done.returncode != 0:
            errors = _lines(done.stdout, "error")
            raise ToolError(f"host {shell.name}: target {target}: {errors[-1] if errors else done.one_line_error()}; "
                            f"detach it there: {shell.by_hand(script)}")
        return [f"host {shell.name}: target {target}: {n}" for n in _lines(done.stdout, "note")]
