"""A guest as a load host of the embedded lab: its disks from the lab's exports, one fio cell inside it.

This is what a VM testbed builds on: ``lab_guest`` turns (protocol, controller) pairs into
disks QEMU opens from the load host's namespace; ``run_cell`` drives the guest's fio server
with the host's fio client and measures the hypervisor's CPU around the run.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..conventions import DATA_FILE
from ..errors import ToolError
from ..plan.protocols import PROTOCOLS
from ..proc import Runner, SubprocessRunner
from . import hypervisor_cpu
from .image import GuestImage
from .qemu import Disk, Guest, GuestSpec

if TYPE_CHECKING:
    from ..lab.lab import Lab


def disk_url(lab: Lab, protocol: str, host: int = 0) -> str:
    """The URL QEMU opens for ``protocol``'s export from ``host`` (a file export, NFS: the data file in it)."""
    ep = lab.endpoint(protocol, host)
    p = PROTOCOLS.get(protocol)
    return f"{ep.url}/{DATA_FILE}" if p is not None and p.own_file else ep.url


def lab_guest(lab: Lab, image: GuestImage, name: str, disks: Sequence[tuple[str, str]], *, host: int = 0,
              accel: str = "tcg", vcpus: int = 1, memory_mib: int = 512, fio_port: int = 18765,
              runner: Runner | None = None) -> Guest:
    """A guest (not started) in host ``host``'s namespace with one disk per (protocol, controller).

    It is recorded in the lab's record when started, so the lab's teardown stops it.
    """
    spec = GuestSpec(name, image.kernel, image.initrd, accel=accel, vcpus=vcpus, memory_mib=memory_mib,
                     disks=tuple(Disk(disk_url(lab, p, host), c) for p, c in disks), fio_port=fio_port)
    return Guest(spec, runner or SubprocessRunner(), lab.record, lab.names.host_ns(host),
                 lab.workdir / "vm", lab.cgroups)


@dataclass(frozen=True)
class VmCell:
    """One fio run inside a guest: I/Os per job, the run's seconds, hypervisor and guest CPU per I/O."""

    ios: dict[str, int]
    runtime_s: float
    hypervisor: hypervisor_cpu.ThreadCpu
    cpu_per_io: dict[str, float]

    @property
    def iops(self) -> float:
        """All jobs' I/Os over the longest job's runtime (as fio's group reporting counts)."""
        return sum(self.ios.values()) / self.runtime_s if self.runtime_s > 0 else 0.0


def run_cell(guest: Guest, jobfile: Path, fio: str, timeout: float = 300.0) -> VmCell:
    """Run ``jobfile`` in the guest through the host's fio client; CPU measured around the run."""
    before = hypervisor_cpu.sample(guest.pid)
    done = subprocess.run(["ip", "netns", "exec", guest.netns, fio, f"--client={guest.client_arg()}",
                           "--output-format=json", str(jobfile)] if guest.netns else
                          [fio, f"--client={guest.client_arg()}", "--output-format=json", str(jobfile)],
                          capture_output=True, text=True, timeout=timeout)
    after = hypervisor_cpu.sample(guest.pid)
    if done.returncode != 0 or "{" not in done.stdout:
        raise ToolError(f"fio in guest {guest.spec.name}: {(done.stderr or done.stdout).strip()[-300:]}")
    out = json.loads(done.stdout[done.stdout.index("{"):])
    jobs = [j for j in out.get("client_stats", out.get("jobs", [])) if j.get("jobname") != "All clients"]
    ios = {j["jobname"]: j["read"]["total_ios"] + j["write"]["total_ios"] for j in jobs}
    runtime_s = max((j.get("job_runtime", 0) for j in jobs), default=0) / 1000
    spent = hypervisor_cpu.window(before, after)
    total = sum(ios.values())
    figures = hypervisor_cpu.per_io(spent, total)
    busy = sum((j.get("usr_cpu", 0.0) + j.get("sys_cpu", 0.0)) / 100 * j.get("job_runtime", 0) / 1000 for j in jobs)
    if total:
        figures["guest_us_per_io"] = busy / total * 1e6
    return VmCell(ios, runtime_s, spent, figures)
