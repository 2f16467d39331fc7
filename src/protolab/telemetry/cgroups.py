"""CPU per role from cgroups: the lab's servers, the load generators (later the hypervisors).

Each role's processes live in a cgroup of their own, so its CPU time is theirs alone,
whatever else runs on the machine; descendants join their parent's cgroup at fork,
so a fio server's job processes and a server's helpers are counted.

cgroup v2 is preferred: on its hierarchy ``cpu.stat``'s ``usage_usec`` is kept for
every cgroup even with no controller enabled (checked on this machine's
/sys/fs/cgroup/unified, mounted beside v1 controllers). Without v2, v1 ``cpuacct``
(``cpuacct.usage``, ns) does the same. A group is ``protolab-<name>`` (the lab prefix,
or ``run-<id>`` for a run without a lab) with one child per role, so teardown can
remove exactly its own.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .priority import CpuPriority, remove_cgroup, v1_cpu_root
from .source import Fields, Source, lerp

GROUP_PREFIX = "protolab-"
ROLES = ("servers", "loadgen", "hypervisors")


def _is_cgroup2(path: Path) -> bool:
    return (path / "cgroup.controllers").exists() and (path / "cpu.stat").exists()


def find_root(sys_cgroup: Path = Path("/sys/fs/cgroup")) -> tuple[Path, str] | None:
    """Where role cgroups can go and which kind: (path, "v2" | "v1"), or None if neither is usable."""
    for cand in (sys_cgroup, sys_cgroup / "unified"):
        if _is_cgroup2(cand) and os.access(cand, os.W_OK):
            return cand, "v2"
    for cand in (sys_cgroup / "cpuacct", sys_cgroup / "cpu,cpuacct"):
        if (cand / "cpuacct.usage").exists() and os.access(cand, os.W_OK):
            return cand, "v1"
    return None


class RoleCgroups:
    """One cgroup per role under ``protolab-<name>``: create, place processes, read CPU, remove."""

    def __init__(self, name: str, root: tuple[Path, str] | None = None):
        self.name = name
        found = root if root is not None else find_root()
        self.root, self.kind = found if found is not None else (None, "")
        self.group = self.root / f"{GROUP_PREFIX}{name}" if self.root is not None else None
        self.priority = CpuPriority(self.group, self.kind)

    @classmethod
    def at(cls, group: Path) -> RoleCgroups:
        """The role cgroups of an existing group directory (e.g. from a lab record)."""
        kind = "v2" if _is_cgroup2(group.parent) else "v1"
        return cls(group.name.removeprefix(GROUP_PREFIX), (group.parent, kind))

    @property
    def available(self) -> bool:
        """Whether this machine lets us make cgroups (root, v2 or v1 cpuacct mounted)."""
        return self.group is not None

    def path(self, role: str) -> Path:
        """The directory of ``role``'s cgroup."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
        assert self.group is not None
        return self.group / role

    def create(self) -> list[Path]:
        """Make the group and every role's cgroup (existing ones are kept); returns their paths."""
        if self.group is None:
            return []
        made = []
        for role in ROLES:
            self.path(role).mkdir(parents=True, exist_ok=True)
            made.append(self.path(role))
        return made

    def add(self, role: str, pid: int) -> None:
        """Move ``pid`` into ``role``'s cgroup (its later children follow it), and under the CPU
        weight when it is raised."""
        if self.group is not None:
            (self.path(role) / "cgroup.procs").write_text(f"{pid}\n")
            if self.priority.placed:
                self.priority.join(pid, role, remember=False)

    def prioritise(self, harness_pid: int | None = None) -> bool:
        """Raise the roles to the highest CPU weight (telemetry.priority), with ``harness_pid`` (the
        process reading their counters) beside them until ``remove``; False where no weight can be set."""
        if not self.priority.available:
            return False
        self.priority.raise_(self.pids_by_role())
        if harness_pid is not None:
            self.priority.join(harness_pid)
        return True

    def wrap(self, role: str, argv: list[str], netns: str | None = None) -> list[str]:
        """``argv`` (run in ``netns``) behind a shell that joins ``role``'s cgroup and then execs it,
        so every process of the command is inside from its first instruction. Spawn the result
        with no netns: the shell must run before ``ip netns exec``, which remounts /sys and so
        hides the cgroup hierarchy from the command."""
        from ..proc import in_netns

        full = in_netns(argv, netns)
        if self.group is None:
            return full
        procs = [self.path(role) / "cgroup.procs"]
        if self.priority.placed:  # the weight's and limits' group is in another hierarchy
            procs.append(self.priority.procs_file(role))
        return ["sh", "-c", 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
                "sh", *map(str, procs), "--", *full]

    def read(self) -> dict[str, float]:
        """CPU seconds used so far by each role's cgroup (and its descendants)."""
        out: dict[str, float] = {}
        if self.group is None:
            return out
        for role in ROLES:
            p = self.path(role)
            try:
                if self.kind == "v2":
                    stat = dict(line.split() for line in (p / "cpu.stat").read_text().splitlines() if line.strip())
                    out[role] = int(stat["usage_usec"]) / 1e6
                else:
                    out[role] = int((p / "cpuacct.usage").read_text()) / 1e9
            except (OSError, KeyError, ValueError):
                continue
        return out

    def cpu_wait(self) -> dict[str, float]:
        """Seconds so far during which a task of each role was ready to run but waited for a CPU
        (PSI's cpu.pressure 'some' total; cgroup v2 with PSI on only, else nothing)."""
        out: dict[str, float] = {}
        if self.group is None or self.kind != "v2":
            return out
        for role in ROLES:
            try:
                for line in (self.path(role) / "cpu.pressure").read_text().splitlines():
                    if line.startswith("some "):
                        out[role] = int(dict(f.split("=") for f in line.split()[1:])["total"]) / 1e6
            except (OSError, KeyError, ValueError):
                continue
        return out

    def pids(self) -> list[int]:
        """Processes still in any role's cgroup."""
        return [pid for ps in self.pids_by_role().values() for pid in ps]

    def pids_by_role(self) -> dict[str, list[int]]:
        """Processes still in each role's cgroup."""
        found: dict[str, list[int]] = {}
        if self.group is None:
            return found
        for role in ROLES:
            try:
                found[role] = [int(x) for x in (self.path(role) / "cgroup.procs").read_text().split()]
            except OSError:
                continue
        return found

    def limit(self, caps: dict[str, float]) -> None:
        """Cap each role named in ``caps`` at that many cores and lift the caps of the others (telemetry.priority);
        an OSError where the machine has no cpu controller protolab can write."""
        pids = self.pids_by_role()
        for role in ROLES:
            if caps.get(role) is not None or role in self.priority.limits(ROLES):
                self.priority.limit(role, caps.get(role), pids)

    def remove(self, timeout: float = 2.0) -> list[str]:
        """Remove the role cgroups and the group; processes still inside go back to the root
        cgroup first (teardown stops ours before, so these are stragglers). Returns what went."""
        removed = self.priority.remove(timeout)
        if self.group is None or not self.group.exists():
            return removed
        deadline = time.monotonic() + timeout
        for role in ROLES:
            if self.path(role).exists():
                remove_cgroup(self.path(role), self.root, deadline)  # type: ignore[arg-type]
                removed.append(str(self.path(role)))
        self.group.rmdir()
        removed.append(str(self.group))
        return removed


def leftover_groups(name_prefix: str, sys_cgroup: Path = Path("/sys/fs/cgroup")) -> list[Path]:
    """Role-cgroup groups whose name starts with ``protolab-<name_prefix>`` (for leftover checks)."""
    found = [r for r in ((find_root(sys_cgroup) or (None,))[0], v1_cpu_root(sys_cgroup)) if r is not None]
    return sorted(g for r in found for g in r.glob(f"{GROUP_PREFIX}{name_prefix}*"))


# -- the window's sources (telemetry.source) -----------------------------------------------------------


class _RoleSeconds(Source[dict[str, float]]):
    """Seconds per role that only grow, read from the role cgroups, under one Telemetry field."""

    field = ""

    def __init__(self, cgroups: RoleCgroups):
        self.cgroups = cgroups

    def interpolate(self, a: dict[str, float], b: dict[str, float], f: float) -> dict[str, float]:
        return {k: lerp(v, b.get(k, v), f) for k, v in a.items()}

    def delta(self, before: dict[str, float], after: dict[str, float]) -> Fields:
        spent = {role: max(0.0, after[role] - v) for role, v in before.items() if role in after}
        return {self.field: spent} if spent else {}


class RoleCpu(_RoleSeconds):
    """CPU seconds of each role's cgroup (roles_cpu_s): what other work on the machine cannot change."""

    name, field = "roles_cpu", "roles_cpu_s"

    def sample(self) -> dict[str, float]:
        return self.cgroups.read()


class RoleCpuWait(_RoleSeconds):
    """Seconds a task of each role waited for a CPU (roles_cpu_wait_s, PSI); read after the instant."""

    name, field = "roles_cpu_wait", "roles_cpu_wait_s"
    instant = False

    def sample(self) -> dict[str, float]:
        return self.cgroups.cpu_wait()
