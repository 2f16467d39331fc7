"""The one way protolab runs external programs: an injectable command runner.

Adapters (fio, ip, tc, tgtadm, ganesha, nbdkit, ssh) take a ``Runner`` so that
unit tests can pass a fake and integration tests the real ``SubprocessRunner``.
``netns`` runs the command inside a named network namespace via ``ip netns exec``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from .errors import ToolError


@dataclass(frozen=True)
class Completed:
    """The outcome of a finished command."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def one_line_error(self) -> str:
        """The last non-empty line of stderr (or stdout), for one-line error messages."""
        for text in (self.stderr, self.stdout):
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if lines:
                return lines[-1]
        return f"exit code {self.returncode}"


class Runner(Protocol):
    """Runs commands; ``spawn`` starts a long-lived process (a server)."""

    def run(
        self,
        argv: Sequence[str],
        *,
        netns: str | None = None,
        check: bool = True,
        input: str | None = None,
        timeout: float | None = None,
    ) -> Completed: ...

    def spawn(
        self,
        argv: Sequence[str],
        *,
        netns: str | None = None,
        stdout=None,
        stderr=None,
        stdin=None,
        cwd=None,
    ) -> subprocess.Popen: ...


def in_netns(argv: Sequence[str], netns: str | None) -> list[str]:
    """The argv that runs ``argv`` in network namespace ``netns`` (unchanged when None)."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


@dataclass
class SubprocessRunner:
    """The real runner: subprocess, text mode, errors as ToolError naming the command."""

    def run(self, argv, *, netns=None, check=True, input=None, timeout=None) -> Completed:
        full = in_netns(argv, netns)
        try:
            p = subprocess.run(
                full, input=input, capture_output=True, text=True, timeout=timeout
            )
        except FileNotFoundError:
            raise ToolError(
                f"{full[0]}: command not found; run 'make deps' (or install it) and try again"
            ) from None
        except subprocess.TimeoutExpired:
            raise ToolError(f"{shlex.join(full)}: did not finish within {timeout:g} s") from None
        done = Completed(tuple(full), p.returncode, p.stdout, p.stderr)
        if check and p.returncode != 0:
            raise ToolError(f"{shlex.join(full)}: {done.one_line_error()}")
        return done

    def spawn(self, argv, *, netns=None, stdout=None, stderr=None, stdin=None, cwd=None) -> subprocess.Popen:
        full = in_netns(argv, netns)
        try:
            return subprocess.Popen(
                full,
                cwd=cwd,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                stdout=stdout if stdout is not None else subprocess.DEVNULL,
                stderr=stderr if stderr is not None else subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise ToolError(
                f"{full[0]}: command not found; run 'make deps' (or install it) and try again"
            ) from None


@dataclass
class FakeRunner:
    """A runner for unit tests: records every call and answers from a script.

    ``answers`` maps a command prefix (tuple of leading argv words) to a Completed
    or a callable(argv) -> Completed; unmatched commands succeed with empty output.
    """

    answers: dict[tuple[str, ...], object] = field(default_factory=dict)
    calls: list[tuple[tuple[str, ...], str | None]] = field(default_factory=list)

    def _answer(self, argv: Sequence[str]) -> Completed:
        best: tuple[str, ...] = ()
        for prefix in self.answers:
            if tuple(argv[: len(prefix)]) == prefix and len(prefix) > len(best):
                best = prefix
        if best:
            a = self.answers[best]
            return a(list(argv)) if callable(a) else a  # type: ignore[return-value]
        return Completed(tuple(argv), 0, "", "")

    def run(self, argv, *, netns=None, check=True, input=None, timeout=None) -> Completed:
        self.calls.append((tuple(argv), netns))
        done = self._answer(argv)
        if check and done.returncode != 0:
            raise ToolError(f"{shlex.join(argv)}: {done.one_line_error()}")
        return done

    def spawn(self, argv, *, netns=None, stdout=None, stderr=None, stdin=None, cwd=None):
        self.calls.append((tuple(argv), netns))
        raise NotImplementedError("FakeRunner cannot spawn processes")


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, start time, state) of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[19], fields[0]


def descendants(pid: int) -> list[tuple[int, str]]:
    """Every process forked under ``pid`` (its children, theirs …), each with its start time, so that a pid used
    again by another process is never signalled."""
    children: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            children.setdefault(st[0], []).append((int(name), st[1]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def _signal(procs: list[tuple[int, str]], sig: int) -> bool:
    """Send ``sig`` to each of ``procs`` still the same process and alive; whether any was."""
    alive = False
    for pid, start in procs:
        st = _stat(pid)
        if st is not None and st[1] == start and st[2] != "Z":
            alive = True
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
    return alive


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """Stop a process (started in a session of its own), its process group and every process it forked: SIGTERM,
    then SIGKILL after ``grace`` seconds (at once when ``grace`` is 0).

    fio's job processes each call setsid() (fio 3.33, backend.c thread_main): they leave fio's process group, so
    they are found as its descendants first — a hung one (libiscsi's after tgt's restart) outlived its group's
    SIGKILL and held fio's pipes until the lab went down."""
    forked = descendants(proc.pid)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if sig == signal.SIGTERM and grace <= 0:
            continue
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        others = _signal(forked, sig)
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGKILL or not (_group_alive(proc.pid) or others and _signal(forked, 0)):
                return
        except subprocess.TimeoutExpired:
            continue
