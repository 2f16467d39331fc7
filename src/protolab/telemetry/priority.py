"""The lab's CPU weight and limits: its servers, load generators and hypervisors (and protolab itself,
which reads their counters) run at the highest CPU weight, so other work on the machine yields the
CPU to them and cannot change what an I/O costs them; a configuration may cap a role's CPU
(``cpu_limit``: a weaker array controller or load host), which the CFS bandwidth controller enforces.

Accounting alone cannot keep CPU per I/O steady under other load: measured on this 2-core
machine (fio + nbdkit, 8 KiB random reads, one CPU burner), the burner pushed the roles onto
one core between them, fio's context switches per I/O went from 0.1 to 0.45 and both roles'
CPU per I/O rose 20-40 %; with the roles at the highest weight they stayed within a few % of a
quiet run (a 16x weight was not enough: +17 %).

Where the weight is set:
- cgroup v2 with the cpu controller (``cpu.weight`` in the role group): weight 10000 on the
  group ``protolab-<name>``; protolab itself goes into its child ``harness``;
- else a v1 ``cpu`` hierarchy (``cpu.shares``): a group ``protolab-<name>`` there at 262144,
  with a child per role (and ``harness``) that the roles' processes and protolab join beside
  their accounting cgroups;
- else nothing (``available`` is False).

Where a limit is set: v2, ``cpu.max`` of the role's own cgroup (the group enables the cpu
controller for its children); v1, ``cpu.cfs_quota_us`` of the role's child of the v1 group,
which a limit creates at the default weight when the plan did not ask for the highest.

A process that joins keeps its original cgroup on record and goes back on ``leave``.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from .source import Fields, Source, lerp

V2_WEIGHT = 10000  # cgroup v2 cpu.weight's maximum (default 100)
V1_SHARES = 262144  # cgroup v1 cpu.shares' maximum (default 1024)
HARNESS = "harness"
PERIOD_US = 100_000  # the CFS bandwidth period of a limit (the kernel's default)


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
        """Whether the highest weight is set (also true for another instance that set it)."""
        if self.group is None:
            return False
        try:
            if self.kind == "v2":
                return (self.group / HARNESS).is_dir() and \
                    int((self.group / "cpu.weight").read_text()) == V2_WEIGHT
            return int((self.group / "cpu.shares").read_text()) == V1_SHARES
        except (OSError, ValueError):
            return False

    @property
    def placed(self) -> bool:
        """Whether processes must join this hierarchy's role children to be weighted or limited (v1: the
        group exists; in v2 the roles are its children already)."""
        return self.kind == "v1" and self.group is not None and self.group.is_dir()

    def procs_file(self, role: str = HARNESS) -> Path:
        """Where a process of ``role`` (or protolab itself: the harness) writes its pid to join the weight
        (v2: only the harness joins; the roles are in the group through their accounting cgroups)."""
        assert self.group is not None
        return self.group / role / "cgroup.procs"

    def raise_(self, pids: dict[str, list[int]]) -> None:
        """Set the highest weight and move ``pids`` (the roles' processes so far, by role) under it."""
        if self.group is None:
            return
        if self.kind == "v2":
            (self.group / HARNESS).mkdir(exist_ok=True)
            (self.group / "cpu.weight").write_text(f"{V2_WEIGHT}\n")
            return  # the roles' cgroups are children of the weighted group already
        self._v1_place(pids)
        (self.group / "cpu.shares").write_text(f"{V1_SHARES}\n")

    def _v1_place(self, pids: dict[str, list[int]]) -> None:
        """Make the v1 group and its children; move the roles' processes into theirs."""
        assert self.group is not None
        (self.group / HARNESS).mkdir(parents=True, exist_ok=True)
        for role, ps in pids.items():
            (self.group / role).mkdir(exist_ok=True)
            for pid in ps:
                self.join(pid, role, remember=False)

    def limit(self, role: str, cpus: float | None, pids: dict[str, list[int]]) -> None:
        """Cap ``role``'s CPU at ``cpus`` cores (None: no cap); ``pids`` are the roles' processes so far (v1 moves
        them into their role's child the first time)."""
        if self.group is None:
            raise OSError(errno.ENOTSUP, "no cgroup cpu controller to limit a role's CPU")
        quota = "max" if cpus is None else str(max(1000, round(cpus * PERIOD_US)))
        if self.kind == "v2":
            control = self.group / "cgroup.subtree_control"
            if "cpu" not in control.read_text().split():
                control.write_text("+cpu\n")
            (self.group / role / "cpu.max").write_text(f"{quota} {PERIOD_US}\n")
            return
        if not self.placed:
            self._v1_place(pids)
        (self.group / role).mkdir(exist_ok=True)
        (self.group / role / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (self.group / role / "cpu.cfs_quota_us").write_text(f"{-1 if cpus is None else quota}\n")

    def limits(self, roles: tuple[str, ...]) -> dict[str, float]:
        """Each capped role's limit in cores, read from the cgroup files (none set: {})."""
        out: dict[str, float] = {}
        if self.group is None:
            return out
        for role in roles:
            try:
                if self.kind == "v2":
                    quota, period = (self.group / role / "cpu.max").read_text().split()
                else:
                    quota = (self.group / role / "cpu.cfs_quota_us").read_text().strip()
                    period = (self.group / role / "cpu.cfs_period_us").read_text().strip()
            except (OSError, ValueError):
                continue
            if quota not in ("max", "-1"):
                out[role] = int(quota) / int(period)
        return out

    def throttled(self, roles: tuple[str, ...]) -> dict[str, float]:
        """Seconds so far each role's tasks were held back by their limit (cpu.stat: v2 throttled_usec, v1
        throttled_time in ns)."""
        out: dict[str, float] = {}
        if self.group is None:
            return out
        key, scale = ("throttled_usec", 1e6) if self.kind == "v2" else ("throttled_time", 1e9)
        for role in roles:
            try:
                stat = dict(line.split() for line in (self.group / role / "cpu.stat").read_text().splitlines()
                            if line.strip())
                out[role] = int(stat[key]) / scale
            except (OSError, KeyError, ValueError):
                continue
        return out

    def join(self, pid: int, role: str = HARNESS, remember: bool = True) -> None:
        """Move ``pid`` (all its threads) into ``role``'s place under the weight; with ``remember``, ``leave``
        moves it back."""
        if not (self.on or self.placed):
            return
        if remember:
            try:
                own = _own_cgroup(self.kind, Path(f"/proc/{pid}/cgroup").read_text())
            except OSError:
                return
            if own is not None:
                self._left[pid] = self.root / own.lstrip("/")  # type: ignore[operator]
        try:
            self.procs_file(role).write_text(f"{pid}\n")
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
        """Remove the v1 weight group and its children (processes still inside go to the hierarchy's root) or
        the v2 harness child; returns what went. The v2 group itself goes with the role cgroups."""
        if self.group is None:
            return []
        self.leave()
        deadline = time.monotonic() + timeout
        target = self.group / HARNESS if self.kind == "v2" else self.group
        if not target.exists():
            return []
        if self.kind == "v1":
            for child in sorted(p for p in target.iterdir() if p.is_dir()):
                remove_cgroup(child, self.root, deadline)  # type: ignore[arg-type]
        remove_cgroup(target, self.root, deadline)  # type: ignore[arg-type]
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


class RoleCpuLimit(Source[tuple[dict[str, float], dict[str, float]]]):
    """Each capped role's CPU limit in cores (roles_cpu_limit: claimed only when the same at both ends of the
    window) and the seconds its tasks were held back by it (roles_cpu_throttled_s); read after the instant."""

    name = "roles_cpu_limit"
    instant = False

    def __init__(self, priority: CpuPriority, roles: tuple[str, ...]):
        self.priority, self.roles = priority, roles

    def sample(self) -> tuple[dict[str, float], dict[str, float]]:
        limits = self.priority.limits(self.roles)
        return limits, self.priority.throttled(tuple(limits))

    def interpolate(self, a, b, f: float):  # type: ignore[no-untyped-def]
        return (a[0] if a[0] == b[0] else {}), {k: lerp(v, b[1].get(k, v), f) for k, v in a[1].items()}

    def delta(self, before, after) -> Fields:  # type: ignore[no-untyped-def]
        if not after[0] or before[0] != after[0]:
            return {}
        held = {k: max(0.0, v - before[1][k]) for k, v in after[1].items() if k in before[1]}
        return {"roles_cpu_limit": after[0], "roles_cpu_throttled_s": held}
