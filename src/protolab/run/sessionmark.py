"""The mark a session of a run keeps while it runs, so that the next session can clean what a killed one left.

A session signalled (SIGINT, SIGTERM, SIGHUP) tears its testbed down itself; one killed outright (SIGKILL, the OOM
killer) cannot. While it runs, a session keeps a mark in root's /run/protolab/sessions, named by the run's own key
(run.attachments.run_key): its pid and kernel start time, and — each written before it is made — the lab's work
directory and prefix, the fio servers' socket directory and the testbed's own role cgroups. `protolab resume` reads
the mark first: a mark whose process is gone (its pid absent, or reused by a process with another start time) is a
killed session, and exactly what it names is removed — the fio servers whose command line names its socket
directory, the processes in its role cgroups and the cgroups, and its lab by the lab's own record (namespaces,
servers, mounts, loop devices, guests, the lab's cgroups), only when that record's holder is the killed session.
What it attached on hosts has its own list (run.attachments). Nothing is swept by prefix. The mark lives in /run,
not in the run directory: a run directory is not trusted, and nothing in it may make root kill or remove a thing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ProtolabError
from ..proc import Runner
from ..results.files import atomic_write
from ..telemetry.cgroups import GROUP_PREFIX, RoleCgroups
from ..trust import PRIVATE_BASE, UnsafePath, check_file, private_dir
from .attachments import run_key

MARKS = "sessions"
AGENTS_BASE = PRIVATE_BASE  # where the fio servers' socket directories are made


def marks_root() -> Path:
    """Where the marks are kept (root's alone, made with the first mark; tests point it elsewhere)."""
    return PRIVATE_BASE / MARKS


def _alive(pid: int, started: int | None) -> bool:
    from ..lab.procs import alive

    return alive(pid, started)


def _start_time(pid: int) -> int | None:
    from ..lab.procs import start_time

    return start_time(pid)


@dataclass
class Mark:
    """What a session is (pid, kernel start time, its number) and what it made outside the lab's record."""

    pid: int
    started: int | None
    session: int = 0
    lab_workdir: str | None = None
    lab_prefix: str | None = None
    agents: str | None = None  # the fio servers' socket directory (/run/protolab/agents-*)
    cgroup: str | None = None  # the testbed's own role cgroups' group (a lab's are in its record)
    extra: dict[str, Any] = field(default_factory=dict)

    def checked(self, where: Path) -> Mark:
        """This mark if every name in it is one a session could have made; ProtolabError (nothing removed) else."""
        bad = None
        if not isinstance(self.pid, int) or not isinstance(self.started, (int, type(None))):
            bad = "pid"
        elif self.agents is not None and (Path(self.agents).parent != AGENTS_BASE
                                          or not Path(self.agents).name.startswith("agents-")):
            bad = f"agents {self.agents!r}"
        elif self.cgroup is not None and (not self.cgroup.startswith("/sys/fs/cgroup/") or ".." in self.cgroup
                                          or not Path(self.cgroup).name.startswith(f"{GROUP_PREFIX}run-")):
            bad = f"cgroup {self.cgroup!r}"
        elif self.lab_workdir is not None and (not os.path.isabs(self.lab_workdir) or not self.lab_prefix):
            bad = f"lab_workdir {self.lab_workdir!r}"
        if bad is not None:
            raise ProtolabError(f"{where}: {bad} is not what a protolab session makes; nothing was removed — "
                                "remove the file by hand if it is not protolab's")
        return self


class SessionMark:
    """The mark of one run's session: read the last one, clean what a killed one left, keep this one's."""

    def __init__(self, run_path: Path, root: Path | None = None):
        self.path = (root or marks_root()) / f"{run_key(run_path)}.json"
        self.mark: Mark | None = None

    def read(self) -> Mark | None:
        """The mark left by an earlier session of this run (None when there is none or it is unreadable)."""
        if not os.path.lexists(self.path):
            return None
        try:
            check_file(self.path, "session mark")
            data = json.loads(self.path.read_text())
            mark = Mark(**data)
        except (UnsafePath, OSError, ValueError, TypeError):
            return None
        return mark.checked(self.path)

    def begin(self, session: int) -> None:
        """This process's session begins: its mark replaces the killed one's (cleaned before)."""
        pid = os.getpid()
        self.mark = Mark(pid, _start_time(pid), session)
        self._save()

    def note(self, **made: str) -> None:
        """Record what the session is about to make (call before making it)."""
        if self.mark is not None:
            for k, v in made.items():
                setattr(self.mark, k, v)
            self._save()

    def end(self) -> None:
        """The session tore everything down: no mark is left."""
        self.path.unlink(missing_ok=True)
        self.mark = None
        try:
            self.path.parent.rmdir()  # only when no other run's mark is there
        except OSError:
            pass

    def _save(self) -> None:
        assert self.mark is not None
        if self.path.parent == PRIVATE_BASE / MARKS:
            private_dir(MARKS)  # 0700, checked root's
        atomic_write(self.path, json.dumps(asdict(self.mark)), mode=0o600)

    # -- a killed session ---------------------------------------------------------------------------------------

    def clean_dead(self, runner: Runner, note: Callable[[str], None], keep_logs_in: Path | None = None
                   ) -> tuple[Mark | None, list[str]]:
        """Remove what the killed session named in the mark left; returns its mark (None: no session was killed)
        and what was removed. ProtolabError when its process still runs."""
        mark = self.read()
        if mark is None:
            return None, []
        if mark.pid != os.getpid() and _alive(mark.pid, mark.started):
            raise ProtolabError(f"session {mark.session} of this run (pid {mark.pid}) is still running; let it end, "
                                "or stop it, first")
        note(f"cleaning what session {mark.session} (pid {mark.pid}, killed) left")
        removed = [*_agents(mark), *_cgroup(mark), *_lab(mark, runner, note, keep_logs_in)]
        self.path.unlink(missing_ok=True)
        return mark, removed


def processes_naming(directory: str) -> list[int]:
    """Pids of this user's processes whose command line names a path inside ``directory`` (its fio servers, their
    ssh)."""
    needle = directory.rstrip("/").encode() + b"/"
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
            if proc.stat().st_uid != os.geteuid():  # protolab's own: another user's process is never signalled
                continue
        except OSError:
            continue
        if needle in argv:
            found.append(int(proc.name))
    return found


def _agents(mark: Mark) -> list[str]:
    if mark.agents is None:
        return []
    from ..lab.procs import terminate

    out = []
    for pid in processes_naming(mark.agents):
        terminate(pid, 2.0)
        out.append(f"fio server (pid {pid})")
    if os.path.isdir(mark.agents) and not os.path.islink(mark.agents):
        shutil.rmtree(mark.agents, ignore_errors=True)
        out.append(f"directory {mark.agents}")
    return out


def _cgroup(mark: Mark) -> list[str]:
    if mark.cgroup is None or not os.path.isdir(mark.cgroup):
        return []
    from ..lab.procs import terminate

    cg = RoleCgroups.at(Path(mark.cgroup))
    out = []
    for pid in cg.pids():  # fio and what it forked, in the killed session's own groups
        terminate(pid, 2.0)
        out.append(f"process {pid} (in {mark.cgroup})")
    return out + [f"cgroup {p}" for p in cg.remove()]


def _lab(mark: Mark, runner: Runner, note: Callable[[str], None], keep_logs_in: Path | None) -> list[str]:
    if mark.lab_workdir is None:
        return []
    from ..lab.lab import Lab
    from ..lab.record import Record

    workdir = Path(mark.lab_workdir)
    if not Record.exists(workdir):
        return []
    lab = Lab.from_record(workdir, runner)
    holder = lab.record.state.get("holder_pid")
    if lab.spec.prefix != mark.lab_prefix or holder not in (None, mark.pid):
        note(f"the lab in {workdir} is not the one session {mark.session} made (prefix '{lab.spec.prefix}', "
             f"holder {holder}): left alone")
        return []
    note(f"tearing down the lab session {mark.session} left in {workdir}")
    return lab.down(keep_logs_in=keep_logs_in)


def new_agents_dir() -> Path:
    """A fresh name for the fio servers' socket directory (made by the caller after noting it)."""
    return AGENTS_BASE / f"agents-{secrets.token_hex(6)}"
