"""The hypervisor's CPU, split as the studies split it: vCPU threads against I/O (everything else).

QEMU names its threads: "CPU 0/TCG" or "CPU 0/KVM" run the guest's vCPUs; the main
loop, "worker" threads (thread-pool I/O), "IO …" iothreads and "call_rcu" carry the
device emulation and the storage initiators (libiscsi, libnfs, nbd). Times are read from
/proc/PID/task/*/stat (utime + stime, clock ticks), so a window is two samples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ThreadCpu:
    """CPU seconds of one QEMU process at one moment: vCPU threads, I/O threads, and per thread."""

    vcpu_s: float
    io_s: float
    threads: dict[str, float]

    @property
    def total_s(self) -> float:
        """vCPU and I/O together."""
        return self.vcpu_s + self.io_s


def is_vcpu(comm: str) -> bool:
    """Whether a QEMU thread name is a vCPU thread ("CPU 0/TCG", "CPU 1/KVM")."""
    return comm.startswith("CPU ") and "/" in comm


def sample(pid: int, proc: Path = Path("/proc")) -> ThreadCpu:
    """The CPU time so far of every thread of QEMU process ``pid`` (threads that exited are not counted)."""
    vcpu = io = 0.0
    threads: dict[str, float] = {}
    for task in sorted((proc / str(pid) / "task").iterdir()):
        try:
            comm = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except OSError:  # a thread that ended between listing and reading
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        secs = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        threads[f"{comm}#{task.name}"] = secs
        if is_vcpu(comm):
            vcpu += secs
        else:
            io += secs
    return ThreadCpu(vcpu, io, threads)


def window(before: ThreadCpu, after: ThreadCpu) -> ThreadCpu:
    """CPU seconds spent between two samples of the same process."""
    threads = {k: v - before.threads.get(k, 0.0) for k, v in after.threads.items()}
    return ThreadCpu(after.vcpu_s - before.vcpu_s, after.io_s - before.io_s, threads)


def per_io(spent: ThreadCpu, ios: int) -> dict[str, float]:
    """Hypervisor CPU microseconds per I/O: vCPU, I/O threads and total (0 I/Os gives no figure)."""
    if ios <= 0:
        return {}
    return {"hv_vcpu_us_per_io": spent.vcpu_s / ios * 1e6, "hv_io_us_per_io": spent.io_s / ios * 1e6,
            "hv_us_per_io": spent.total_s / ios * 1e6}


def guest_per_io(job: dict, ios: int) -> dict[str, float]:
    """The guest's own CPU per I/O from fio's JSON job (usr_cpu/sys_cpu are % of the job's runtime)."""
    runtime_s = job.get("job_runtime", 0) / 1000
    if ios <= 0 or runtime_s <= 0:
        return {}
    busy = (job.get("usr_cpu", 0.0) + job.get("sys_cpu", 0.0)) / 100 * runtime_s
    return {"guest_us_per_io": busy / ios * 1e6}
