"""The lab's CPU weight: its servers, load generators and hypervisors (and protolab itself, which
reads their counters) run at the highest CPU weight, so other work on the machine yields the
CPU to them and cannot change what an I/O costs them.

Accounting alone cannot keep CPU per I/O steady under other load: measured on this 2-core
machine (fio + nbdkit, 8 KiB random reads, one CPU burner), the burner pushed the roles onto
one core between them, fio's context switches per I/O went from 0.1 to 0.45 and both roles'
CPU per I/O rose 20-40 %; with the roles at the highest weight they stayed within a few % of a
quiet run (a 16x weight was not enough: +17 %).

Where the weight is set:
- cgroup v2 with the cpu controller (``cpu.weight`` in the role group): weight 10000 on the
  group ``protolab-<name>``; protolab itself goes into its child ``harness``;
- else a v1 ``cpu`` hierarchy (``cpu.shares``): a group ``protolab-<name>`` there at 262144,
  which the roles' processes and protolab join beside their accounting cgroups;
- else nothing (``available`` is False).

A process that joins keeps its original cgroup on record and goes back on ``leave``.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from .source import Fields, Source

V2_WEIGHT = 10000  # cgroup v2 cpu.weight's maximum (default 100)
V1_SHARES = 262144  # cgroup v1 cpu.shares' maximum (default 1024)
HARNESS = "harness"


def v1_cpu_root(sys_cgroup: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The mounted v1 hierarchy with the cpu controller, if any."""
    for cand in (sys_cgroup / "cpu", sys_cgroup / "cpu,cpuacct"):
        if (cand / "cpu.shares").exists() and os.access(cand, os.W_OK):
            return cand
    return None


def _own_cgroup(kind: str, proc_cgroup: str) -> str | None:
    """This process's cgroup path (relative to its hierarchy's mount) from /proc/self/cgroup text."""
    for line in proc_cgroup.splitlines():
        num, controllers, path = line.split(":", 2)
        if kind == "v2" and num == "0" and controllers == "":
            return path
        if kind == "v1" and "cpu" in controllers.split(","):
            return path
    return None


class CpuPriority:
    """The highest CPU weight for the processes of one role group (see the module's text)."""

    def __init__(self, group: Path | None, group_kind: str, sys_cgroup: Path = Path("/sys/fs/cgroup")):
        self.kind, self.group, self.root = "", None, None  # type: tuple[str, Path | None, Path | None]
        if group is not None and group_kind == "v2" and (group.parent / "cgroup.subtree_control").exists() and \
                "cpu" in (group.parent / "cgroup.subtree_control").read_text().split():
            self.kind, self.group, self.root = "v2", group, group.parent
        elif group is not None and (v1 := v1_cpu_root(sys_cgroup)) is not None:
            self.kind, self.group, self.root = "v1", v1 / group.name, v1
        self._left: dict[int, Path] = {}

    @property
    def available(self) -> bool:
        return self.group is not None

    @property
    def on(self) -> bool:
        """Whether the weight is set (also true for another instance that set it)."""
        return self.group is not None and self.procs_file().parent.is_dir()

    def procs_file(self) -> Path:
        """Where a process writes its pid to join the weight (v2: the group's harness child;
        roles there are already in the group through their accounting cgroups)."""
        assert self.group is not None
        return self.group / HARNESS / "cgroup.procs" if self.kind == "v2" else self.group / "cgroup.procs"

    def raise_(self, pids: list[int]) -> None:
        """Set the highest weight and move ``pids`` (the roles' processes so far) under it."""
        if self.group is None:
            return
        if self.kind == "v2":
            (self.group / HARNESS).mkdir(exist_ok=True)
            (self.group / "cpu.weight").write_text(f"{V2_WEIGHT}\n")
            return  # the roles' cgroups are children of the weighted group already
        self.group.mkdir(exist_ok=True)
        (self.group / "cpu.shares").write_text(f"{V1_SHARES}\n")
        for pid in pids:
            self.join(pid, remember=False)

    def join(self, pid: int, remember: bool = True) -> None:
        """Move ``pid`` (all its threads) under the weight; with ``remember``, ``leave`` moves it back."""
        if not self.on:
            return
        if remember:
            try:
                own = _own_cgroup(self.kind, Path(f"/proc/{pid}/cgroup").read_text())
            except OSError:
                return
            if own is not None:
                self._left[pid] = self.root / own.lstrip("/")  # type: ignore[operator]
        try:
            self.procs_file().write_text(f"{pid}\n")
        except OSError as e:
            if e.errno != errno.ESRCH:  # a process that ended meanwhile needs no weight
                raise

    def leave(self) -> None:
        """Move the processes that joined with ``remember`` back to where they were."""
        for pid, back in self._left.items():
            try:
                (back / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                pass  # gone, or its old cgroup went: remove() takes it to the root
        self._left.clear()

    def remove(self, timeout: float = 2.0) -> list[str]:
        """Remove the v1 weight group (processes still inside go to the hierarchy's root) or the v2
        harness child; returns what went. The v2 group itself goes with the role cgroups."""
        if self.group is None:
            return []
        self.leave()
        target = self.group / HARNESS if self.kind == "v2" else self.group
        if not target.exists():
            return []
        remove_cgroup(target, self.root, time.monotonic() + timeout)  # type: ignore[arg-type]
        return [str(target)]


def remove_cgroup(target: Path, root: Path, deadline: float) -> None:
    """Remove the cgroup ``target``; processes still inside go to ``root`` (its hierarchy's root) first.
    EBUSY (a process, or a dying one, still counted) is retried until ``deadline`` (time.monotonic)."""
    while target.exists():
        try:
            pids = (target / "cgroup.procs").read_text().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                (root / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                pass  # gone meanwhile
        try:
            target.rmdir()
        except OSError as e:
            if e.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class RoleCpuWeight(Source[bool]):
    """Whether the roles ran at the highest CPU weight (roles_cpu_weight): claimed only when it held at both
    ends of the window; read after the instant."""

    name = "roles_cpu_weight"
    instant = False

    def __init__(self, priority: CpuPriority):
        self.priority = priority

    def sample(self) -> bool:
        return bool(self.priority.on)

    def interpolate(self, a: bool, b: bool, f: float) -> bool:
        return a and b

    def delta(self, before: bool, after: bool) -> Fields:
        return {"roles_cpu_weight": "highest"} if before and after else {}
