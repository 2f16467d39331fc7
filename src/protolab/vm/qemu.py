"""QEMU behind one adapter: a guest's command line, start (recorded first), readiness, stop.

A guest boots the project's kernel and initramfs (scripts/build-guest.sh), runs
``fio --server`` and is reached over a user-mode network forward on 127.0.0.1 of the
load host's namespace, so fio's control traffic never crosses the lab's links. Its data
disks are opened by QEMU itself (libiscsi, libnfs, nbd) from that namespace, so the
storage traffic does cross them.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ProtolabError, ToolError
from ..plan.protocols import qemu_schemes
from ..proc import Runner
from ..trust import open_nofollow
from .controllers import controller, device_args
from .guestcpu import KERNEL_ARG as STAT_ARG
from .guestcpu import StatChannel
from .guestnet import DataNic
from .guestssh import GuestSsh

if TYPE_CHECKING:
    from ..lab.record import Record, Resource
    from ..telemetry.cgroups import RoleCgroups

QEMU = "qemu-system-x86_64"
GUEST_FIO_PORT = 8765
READY_LINE = "protolab-guest: fio server ready"
DISK_LINE = "protolab-guest: disks"
#: Linux's COMMAND_LINE_SIZE on x86 (2048, its NUL included)
MAX_CMDLINE = 2047


def kernel_cmdline(name: str, words: list[str]) -> str:
    """Guest ``name``'s kernel command line with ``words``; ProtolabError when Linux would cut it short (an access
    list or an attach would lose its end)."""
    cmdline = " ".join(["console=ttyS0 quiet panic=-1", *words])
    if len(cmdline) > MAX_CMDLINE:
        raise ProtolabError(f"guest {name}: its kernel command line would be {len(cmdline)} bytes, more than the "
                            f"{MAX_CMDLINE} Linux takes; use fewer configurations, hosts or VMs per host with kernel "
                            "data paths in one plan")
    return cmdline


@dataclass(frozen=True)
class Disk:
    """One data disk: the storage URL QEMU opens (iscsi://, nbd://, nfs://…/file) or a local file (an absolute
    path: the storage server guest's disk in the pool), and its controller."""

    url: str
    controller: str = "virtio-scsi"
    queues: int | None = None

    def __post_init__(self) -> None:
        controller(self.controller)  # a wrong name is refused when the disk is described
        if not self.url.startswith("/") and self.url.split("://", 1)[0] not in qemu_schemes():
            raise ProtolabError(f"disk {self.url!r}: QEMU attaches {', '.join(qemu_schemes())} URLs or a "
                                "local file only")


@dataclass(frozen=True)
class GuestSpec:
    """A guest: name, accelerator (kvm or tcg, already decided), vCPUs, memory, disks, forward port; a data NIC on
    the lab's links and what its init does (kernel command line words, guestnet and kernelpaths) when it has one."""

    name: str
    kernel: Path
    initrd: Path
    accel: str = "tcg"
    vcpus: int = 1
    memory_mib: int = 512
    disks: tuple[Disk, ...] = ()
    fio_port: int = 18765  # on 127.0.0.1 in the load host's namespace
    nic: DataNic | None = None
    append: tuple[str, ...] = ()
    stat: StatChannel | None = None  # the guest answers with its /proc/stat on a second serial port (vm.guestcpu)
    ssh: GuestSsh | None = None  # reached over ssh as a user's host is (vm.guestssh)

    def argv(self, pidfile: Path, console: Path) -> list[str]:
        """The QEMU command line."""
        if self.accel not in ("kvm", "tcg"):
            raise ProtolabError(f"guest {self.name}: accelerator {self.accel!r} is not kvm or tcg")
        cmdline = kernel_cmdline(self.name, [*self.append, *(self.nic.kernel_args() if self.nic else []),
                                             *([STAT_ARG] if self.stat else []),
                                             *(self.ssh.kernel_args() if self.ssh else [])])
        forwards = [f"hostfwd=tcp:127.0.0.1:{self.fio_port}-:{GUEST_FIO_PORT}", *([self.ssh.hostfwd()] if self.ssh
                                                                                 else [])]
        # debug-threads names the threads ("CPU 0/TCG", "worker"): the CPU split reads them
        argv = [QEMU, "-name", f"{self.name},debug-threads=on", "-accel", self.accel,
                # TCG: the widest emulated CPU; KVM: the host's (stock models hang on some hosts)
                "-cpu", "host" if self.accel == "kvm" else "max",
                "-smp", str(self.vcpus), "-m", str(self.memory_mib),
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", str(self.kernel), "-initrd", str(self.initrd),
                "-append", cmdline,
                "-serial", f"file:{console}", "-pidfile", str(pidfile),
                "-netdev", ",".join(["user,id=ctl,restrict=on", *forwards]),
                "-device", "virtio-net-pci,netdev=ctl"]
        if self.stat is not None:
            argv += self.stat.qemu_args()  # after the console: ttyS1
        if self.nic is not None:
            argv += self.nic.qemu_args()
        for i, d in enumerate(self.disks):
            # cache=none: the guest's I/O goes to the initiator, not into QEMU's page cache
            argv += ["-drive", f"if=none,id=d{i},format=raw,cache=none,file={d.url}"]
            argv += device_args(d.controller, i, f"d{i}", d.queues)
        return argv


@dataclass
class Guest:
    """A running (or not yet started) guest in a load host's namespace, recorded in the lab's record."""

    spec: GuestSpec
    runner: Runner
    record: Record
    netns: str | None
    workdir: Path
    cgroups: RoleCgroups | None = None
    resource: Resource | None = None
    role: str = "hypervisors"  # the cgroup its QEMU runs in (a storage server guest: "servers")
    popen: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def console(self) -> Path:
        """The guest's serial console log."""
        return self.workdir / f"{self.spec.name}.console.log"

    @property
    def pidfile(self) -> Path:
        """QEMU's pidfile."""
        return self.workdir / f"{self.spec.name}.pid"

    @property
    def pid(self) -> int | None:
        """QEMU's process id once started."""
        return self.popen.pid if self.popen is not None else None

    def start(self) -> None:
        """Record the guest, then start QEMU (the record comes first: a crash leaves nothing unknown)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = self.spec.argv(self.pidfile, self.console)
        self.console.unlink(missing_ok=True)  # readiness is read from it: no earlier boot's lines
        if self.spec.stat is not None:
            self.spec.stat.make()
        self.resource = self.record.add("process", f"qemu-{self.spec.name}", netns=self.netns,
                                        pidfile=str(self.pidfile))
        netns = self.netns
        if self.cgroups is not None:  # the hypervisor's CPU as a role of its own (a server guest's: the server's)
            argv, netns = self.cgroups.wrap(self.role, argv, netns), None
        with os.fdopen(open_nofollow(self.workdir / f"{self.spec.name}.qemu.log",
                                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640), "ab") as log:
            self.popen = self.runner.spawn(argv, netns=netns, stdout=log, stderr=subprocess.STDOUT)
        from ..lab.procs import start_time
        self.resource = self.record.update(self.resource, pid=self.popen.pid, started=start_time(self.popen.pid))
        if self.spec.nic is not None:
            self.spec.nic.configure(self.runner)

    def console_text(self) -> str:
        """What the guest wrote on its console so far."""
        try:
            return self.console.read_text(errors="replace")
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 120.0) -> list[str]:
        """Wait for the guest's fio server; returns the guest's block devices. ToolError if QEMU dies or times out."""
        deadline = time.monotonic() + timeout
        while READY_LINE not in (text := self.console_text()):
            if self.popen is not None and self.popen.poll() is not None:
                raise ToolError(f"guest {self.spec.name}: QEMU exited ({self.popen.returncode}) during boot: "
                                f"{self.log_tail()}")
            if time.monotonic() > deadline:
                raise ToolError(f"guest {self.spec.name}: no fio server within {timeout:g} s; "
                                f"console: {' | '.join(text.splitlines()[-3:]) or 'empty'}")
            time.sleep(0.2)
        line = next(ln for ln in text.splitlines() if ln.startswith(DISK_LINE))
        return line.removeprefix(DISK_LINE).split()

    def log_tail(self) -> str:
        """QEMU's last output lines (one line)."""
        try:
            lines = (self.workdir / f"{self.spec.name}.qemu.log").read_text(errors="replace").splitlines()
        except OSError:
            return "no output"
        return " | ".join(ln.strip() for ln in lines[-3:] if ln.strip()) or "no output"

    def client_arg(self) -> str:
        """fio's --client= value, valid inside the guest's load host namespace."""
        return f"ip:127.0.0.1,{self.spec.fio_port}"

    def stop(self, grace: float = 5.0) -> None:
        """Stop QEMU and forget it in the record; safe to call twice."""
        from ..lab.procs import alive, terminate
        if self.resource is None:
            return
        pid = self.resource.extra.get("pid")
        if pid is not None and alive(pid, self.resource.extra.get("started")):
            terminate(pid, grace)
        if self.popen is not None:
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.record.drop(self.resource)
        self.resource = None
        self.pidfile.unlink(missing_ok=True)
        if self.spec.stat is not None:
            self.spec.stat.remove()
