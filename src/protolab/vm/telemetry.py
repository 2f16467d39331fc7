"""The hypervisor's CPU as a telemetry source (telemetry.source): the QEMU guests' threads, vCPU against I/O.

The guests boot on first use, so the processes are asked for at each sample (``pids``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..telemetry.source import Fields, Source, busiest, lerp, lerp_threads
from . import hypervisor_cpu
from .hypervisor_cpu import ThreadCpu


class QemuThreads(Source[list[ThreadCpu]]):
    """CPU of every QEMU guest's threads around a window: ``hypervisor_cpu_s`` (vCPU, I/O) and QEMU's busiest
    thread over all guests (``hypervisor_thread``); a QEMU that has gone is left out. Read after the instant."""

    name = "qemu"
    instant = False

    def __init__(self, pids: Callable[[], list[int]], proc: Path = Path("/proc")):
        self.pids, self.proc = pids, proc

    def sample(self) -> list[ThreadCpu]:
        out = []
        for pid in self.pids():
            try:
                out.append(hypervisor_cpu.sample(pid, self.proc))
            except OSError:  # a guest that ended: its threads are not counted
                pass
        return out

    def interpolate(self, a: list[ThreadCpu], b: list[ThreadCpu], f: float) -> list[ThreadCpu]:
        """Every guest's threads as one (what `delta` uses), on the line from ``a`` to ``b``: the vCPU and I/O sums,
        and each thread alive at both samples (so a client run names its busiest thread too)."""
        at = [sum(getattr(x, k) for x in a) for k in ("vcpu_s", "io_s")]
        bt = [sum(getattr(x, k) for x in b) for k in ("vcpu_s", "io_s")]
        return [ThreadCpu(*(lerp(u, v, f) for u, v in zip(at, bt)), lerp_threads(_threads(a), _threads(b), f))]

    def delta(self, before: list[ThreadCpu], after: list[ThreadCpu]) -> Fields:
        vcpu = sum(t.vcpu_s for t in after) - sum(t.vcpu_s for t in before)
        io = sum(t.io_s for t in after) - sum(t.io_s for t in before)
        out: Fields = {"hypervisor_cpu_s": {"vcpu": max(0.0, vcpu), "io": max(0.0, io)}}
        top = busiest(_threads(before), _threads(after))
        if top is not None:
            out["hypervisor_thread"] = top
        return out


def _threads(guests: list[ThreadCpu]) -> dict[str, float]:
    """Every guest's threads by 'comm#tid' (thread ids are unique on the machine)."""
    return {k: v for g in guests for k, v in g.threads.items()}
