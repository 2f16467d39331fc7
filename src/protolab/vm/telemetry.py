"""The hypervisor's CPU as a telemetry source (telemetry.source): the QEMU guests' threads, vCPU against I/O.

The guests boot on first use, so the processes are asked for at each sample (``pids``).
"""

from __future__ import annotations

from typing import Any, Callable

from . import cpu
from .cpu import ThreadCpu


class QemuThreads:
    """CPU of every QEMU guest's threads around a window: ``hypervisor_cpu_s`` (vCPU, I/O) and its busiest thread."""

    name = "qemu"

    def __init__(self, pids: Callable[[], list[int]]):
        self.pids = pids

    def sample(self) -> list[ThreadCpu]:
        out = []
        for pid in self.pids():
            try:
                out.append(cpu.sample(pid))
            except OSError:  # a guest that ended: its threads are not counted
                pass
        return out

    def interpolate(self, a: list[ThreadCpu], b: list[ThreadCpu], f: float) -> list[ThreadCpu]:
        """The threads' CPU summed (what `delta` uses), on the line from ``a`` to ``b``."""
        at = [sum(getattr(x, k) for x in a) for k in ("vcpu_s", "io_s")]
        bt = [sum(getattr(x, k) for x in b) for k in ("vcpu_s", "io_s")]
        return [ThreadCpu(*(u + (v - u) * f for u, v in zip(at, bt)), {})]

    def delta(self, a: list[ThreadCpu], b: list[ThreadCpu]) -> dict[str, Any]:
        vcpu = sum(t.vcpu_s for t in b) - sum(t.vcpu_s for t in a)
        io = sum(t.io_s for t in b) - sum(t.io_s for t in a)
        out: dict[str, Any] = {"hypervisor_cpu_s": {"vcpu": max(0.0, vcpu), "io": max(0.0, io)}}
        before = {k: v for t in a for k, v in t.threads.items()}  # 'comm#tid': tids are unique
        spent = {k: max(0.0, v - before.get(k, 0.0)) for t in b for k, v in t.threads.items()}
        if spent:
            top = max(spent, key=lambda k: spent[k])
            out["hypervisor_thread"] = {"thread": top.rsplit("#", 1)[0], "cpu_s": spent[top], "threads": len(spent),
                                        "live_cpu_s": sum(spent.values())}
        return out
