"""Server processes of the lab: started through the runner, recorded, stopped only if still ours.

A recorded process carries its pid and kernel start time, so teardown after a crash
never signals an unrelated process that happens to reuse the pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import ToolError
from ..proc import Runner
from ..telemetry.cgroups import RoleCgroups
from ..trust import open_nofollow
from .record import Record, Resource


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None when it does not exist)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def program(pid: int) -> str | None:
    """The program ``pid`` runs (its kernel comm, at most 15 characters), or None when it does not exist."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def alive(pid: int, started: int | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, if ``started`` is given, is the same process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return False
    return started is None or int(fields[19]) == started


def wait_gone(pid: int, timeout: float, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait until ``pid`` has exited; False when it is still there after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        sleep(0.05)
    return True


def kill(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid``, ignoring a process that is already gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def terminate(pid: int, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds."""
    kill(pid, signal.SIGTERM)
    if not wait_gone(pid, grace):
        kill(pid, signal.SIGKILL)
        wait_gone(pid, 5.0)


@dataclass
class Processes:
    """Starts and stops the lab's servers; keeps Popen handles so children are reaped."""

    runner: Runner
    record: Record
    logdir: Path
    handles: dict[int, subprocess.Popen] = field(default_factory=dict)
    cgroups: RoleCgroups | None = None  # servers run in its "servers" cgroup: CPU per role

    def start(self, name: str, argv: list[str], netns: str | None, cgroup: bool = True, **extra) -> Resource:
        """Spawn ``argv`` in ``netns`` with output in ``<logdir>/<name>.log``; recorded with pid. ``cgroup``: in the
        servers' role cgroup (False for the device model, whose CPU is the array's, not a server's)."""
        res = self.record.add("process", name, netns=netns, **extra)
        self.logdir.mkdir(parents=True, exist_ok=True)
        if self.cgroups is not None and cgroup:  # the shell execs ip netns exec, which execs the server: one pid
            argv, netns = self.cgroups.wrap("servers", argv, netns), None
        with os.fdopen(open_nofollow(self.logdir / f"{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640),
                       "ab") as log:
            p = self.runner.spawn(argv, netns=netns, stdout=log, stderr=subprocess.STDOUT)
        self.handles[p.pid] = p
        return self.record.update(res, pid=p.pid, started=start_time(p.pid))

    def adopt(self, name: str, pid: int, netns: str) -> Resource:
        """Record a process started by one of ours (e.g. the server behind a wrapper shell, from its pidfile):
        only when that pid runs the program ``name`` — a pidfile never makes teardown signal anything else."""
        if program(pid) != name:
            raise ToolError(f"{name}: its pidfile names pid {pid}, which runs {program(pid) or 'nothing'}; "
                            "the lab does not take over that process")
        return self.record.add("process", name, netns=netns, pid=pid, started=start_time(pid))

    def running(self, res: Resource) -> bool:
        """Whether the recorded process still runs."""
        pid = res.extra.get("pid")
        if pid is None:
            return False
        p = self.handles.get(pid)
        if p is not None:
            return p.poll() is None
        return alive(pid, res.extra.get("started"))

    def stop(self, res: Resource, grace: float = 5.0) -> None:
        """Stop the recorded process if it is still the one we started, and forget it."""
        pid = res.extra.get("pid")
        if pid is not None and alive(pid, res.extra.get("started")):
            terminate(pid, grace)
        p = self.handles.pop(pid, None) if pid is not None else None
        if p is not None:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.record.drop(res)

    def log_tail(self, name: str, lines: int = 3) -> str:
        """The last lines of a server's log, for error messages."""
        try:
            text = (self.logdir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(ln.strip() for ln in text.splitlines()[-lines:] if ln.strip())


def wait_until(what: str, ready: Callable[[], bool], timeout: float, check_alive: Callable[[], bool],
               log: Callable[[], str], sleep: Callable[[float], None] = time.sleep) -> None:
    """Poll ``ready`` until true; ToolError naming ``what`` if the server dies or times out."""
    deadline = time.monotonic() + timeout
    while not ready():
        if not check_alive():
            raise ToolError(f"{what} exited during start-up: {log() or 'no output'}")
        if time.monotonic() > deadline:
            raise ToolError(f"{what} was not ready within {timeout:g} s: {log() or 'no output'}")
        sleep(0.1)


def listening(runner: Runner, netns: str, port: int) -> bool:
    """Whether something listens on TCP ``port`` in ``netns``."""
    out = runner.run(["ss", "-Hltn", f"sport = :{port}"], netns=netns, check=False, timeout=10).stdout
    return bool(out.strip())
