"""CPU time from /proc: of a process and all its descendants, and of the whole machine.

A process's time includes its threads (live and exited) and, once reaped, its
children's (cutime/cstime); live and not-yet-reaped descendants are added, so a
fio server's forked job processes are counted whether or not they have exited.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..conventions import digits
from .source import Fields, Source, busiest, lerp, lerp_threads

TICK = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> str:
    """A small /proc file's text, read with one open and as few reads as it takes (no Path, no text layer: a tick
    reads hundreds of these while 160 fio jobs hold both cores, and every microsecond of ours is stretched)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while chunk := os.read(fd, 65536):
            parts.append(chunk)
    finally:
        os.close(fd)
    return b"".join(parts).decode("utf-8", "surrogateescape")


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    try:
        text = _read(f"{proc}/{pid}/stat")
    except OSError:
        return None
    # the command name is in parentheses and may contain spaces: split after the last ')'
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int, proc: Path) -> list[int]:
    out: list[int] = []
    base = f"{proc}/{pid}/task"
    try:
        tasks = os.listdir(base)
    except OSError:
        return out
    for t in tasks:
        try:
            out += [int(c) for c in _read(f"{base}/{t}/children").split()]
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


#: a tick count has at most this many digits (2^64 has 20): a longer word is no count
MAX_TICK_DIGITS = 20


def cpu_line_ticks(line: str) -> list[int] | None:
    """/proc/stat's machine line ('cpu  user nice system idle iowait irq softirq steal …') as its first eight tick
    counts; None for anything else (a core's line, too few or malformed counts: a guest's answer is parsed here
    too, vm.guestcpu)."""
    words = line.split()
    if len(words) < 9 or words[0] != "cpu" or any(len(w) > MAX_TICK_DIGITS or not digits(w) for w in words[1:9]):
        return None  # the machine's line has user … steal at least (Linux 2.6.11 on)
    return [int(w) for w in words[1:9]]


def machine_cpu_seconds(proc: Path = Path("/proc")) -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat's 'cpu' line."""
    for line in (proc / "stat").read_text().splitlines():
        if (ticks := cpu_line_ticks(line)) is not None:
            user, nice, system, idle, iowait, irq, softirq, steal = ticks
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
    base = f"{proc}/{pid}/task"
    try:
        tasks = sorted(os.listdir(base))
    except OSError:
        return out
    for task in tasks:
        try:
            stat = _read(f"{base}/{task}/stat")
        except OSError:  # ended between listing and reading
            continue
        # the thread's name is stat's '(comm)', the text of its comm file: one read a thread, not two
        comm = stat[stat.find("(") + 1:stat.rindex(")")].strip()
        f = stat[stat.rindex(")") + 2:].split()
        out[f"{comm}#{task}"] = (int(f[11]) + int(f[12])) / TICK  # utime, stime
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


# -- the window's sources (telemetry.source) -----------------------------------------------------------


class MachineCpu(Source[tuple[float, float]]):
    """The whole machine's busy and total CPU seconds: machine_busy_s, machine_total_s."""

    name = "machine_cpu"

    def __init__(self, proc: Path = Path("/proc")):
        self.proc = proc

    def sample(self) -> tuple[float, float]:
        return machine_cpu_seconds(self.proc)

    def interpolate(self, a: tuple[float, float], b: tuple[float, float], f: float) -> tuple[float, float]:
        return lerp(a[0], b[0], f), lerp(a[1], b[1], f)

    def delta(self, before: tuple[float, float], after: tuple[float, float]) -> Fields:
        return {"machine_busy_s": after[0] - before[0], "machine_total_s": after[1] - before[1]}


class ServerTrees(Source[dict[str, float | None]]):
    """CPU seconds of each storage server's process and its descendants: servers_cpu_s (None: it was gone)."""

    name = "servers_cpu"

    def __init__(self, pids: dict[str, int], proc: Path = Path("/proc")):
        self.pids, self.proc = pids, proc

    def sample(self) -> dict[str, float | None]:
        return {name: tree_cpu_seconds(pid, self.proc) for name, pid in self.pids.items()}

    def interpolate(self, a: dict[str, float | None], b: dict[str, float | None], f: float) -> dict[str, float | None]:
        return {k: None if v is None or (w := b.get(k)) is None else lerp(v, w, f) for k, v in a.items()}

    def delta(self, before: dict[str, float | None], after: dict[str, float | None]) -> Fields:
        spent: dict[str, float | None] = {}
        for name, a in before.items():
            b = after.get(name)
            spent[name] = None if a is None or b is None else max(0.0, b - a)
        return {"servers_cpu_s": spent}


class ServerThreads(Source[dict[str, dict[str, float]]]):
    """Each storage server's busiest thread (server_threads): read after the instant, as a server with
    hundreds of threads on a busy machine takes seconds to read."""

    name = "server_threads"
    instant = False

    def __init__(self, pids: dict[str, int], proc: Path = Path("/proc")):
        self.pids, self.proc = pids, proc

    def sample(self) -> dict[str, dict[str, float]]:
        return {name: thread_cpu_seconds(pid, self.proc) for name, pid in self.pids.items()}

    def interpolate(self, a: dict[str, dict[str, float]], b: dict[str, dict[str, float]],
                    f: float) -> dict[str, dict[str, float]]:
        return {name: lerp_threads(ts, b[name], f) for name, ts in a.items() if name in b}

    def delta(self, before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> Fields:
        out = {}
        for name, a in before.items():
            top = busiest(a, after.get(name) or {})
            if top is not None:
                out[name] = top
        return {"server_threads": out} if out else {}


class Softirq(Source[list[float]]):
    """Softirq seconds per core (cores_softirq_s), read after the instant; no figure where /proc/stat cannot be read."""

    name = "softirq"
    instant = False

    def __init__(self, proc: Path = Path("/proc")):
        self.proc = proc

    def sample(self) -> list[float]:
        try:
            return cores_softirq_seconds(self.proc)
        except OSError:
            return []

    def interpolate(self, a: list[float], b: list[float], f: float) -> list[float]:
        return [lerp(x, y, f) for x, y in zip(a, b)]

    def delta(self, before: list[float], after: list[float]) -> Fields:
        if not before or len(before) != len(after):
            return {}
        return {"cores_softirq_s": [max(0.0, y - x) for x, y in zip(before, after)]}
