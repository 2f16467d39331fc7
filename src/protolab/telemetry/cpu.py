"""CPU time from /proc: of a process and all its descendants, and of the whole machine.

A process's time includes its threads (live and exited) and, once reaped, its
children's (cutime/cstime); live and not-yet-reaped descendants are added, so a
fio server's forked job processes are counted whether or not they have exited.
"""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may contain spaces: split after the last ')'
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int, proc: Path) -> list[int]:
    out: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for t in tasks:
        try:
            out += [int(c) for c in (t / "children").read_text().split()]
        except OSError:
            continue
    return out


def tree_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """User+system seconds of ``pid`` and its descendants (None if ``pid`` is gone)."""
    f = _stat_fields(pid, proc)
    if f is None:
        return None
    # fields after ')' start at index 3 of stat(5): utime is field 14 → index 11 here
    total = sum(int(x) for x in f[11:15]) / TICK  # utime, stime, cutime, cstime
    for child in _children(pid, proc):
        sub = tree_cpu_seconds(child, proc)
        if sub is not None:
            total += sub
    return total


def machine_cpu_seconds(proc: Path = Path("/proc")) -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat's 'cpu' line."""
    for line in (proc / "stat").read_text().splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
            busy = user + nice + system + irq + softirq + steal
            return busy / TICK, (busy + idle + iowait) / TICK
    raise OSError("no cpu line in /proc/stat")


def thread_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> dict[str, float]:
    """User+system seconds of every live thread of ``pid`` and its descendants, by 'comm#tid'.

    A window's difference of two of these names the busiest thread: a single-threaded
    event loop (tgtd's) can hold a server at one core while its process total looks idle
    on a machine with more cores.
    """
    out: dict[str, float] = {}
    try:
        tasks = sorted((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            comm = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except OSError:  # ended between listing and reading
            continue
        f = stat[stat.rindex(")") + 2:].split()
        out[f"{comm}#{task.name}"] = (int(f[11]) + int(f[12])) / TICK  # utime, stime
    for child in _children(pid, proc):
        out |= thread_cpu_seconds(child, proc)
    return out


def cores_softirq_seconds(proc: Path = Path("/proc")) -> list[float]:
    """Seconds each core has spent in softirq since boot (/proc/stat 'cpuN' lines, the 7th field).

    This kernel samples it at the tick (no IRQ time accounting), so it is an estimate at
    the tick's resolution; softirq run inline is also charged to the task it interrupted.
    """
    out = []
    for line in (proc / "stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            v = line.split()[1:]
            out.append(int(v[6]) / TICK if len(v) > 6 else 0.0)
    return out
