"""Load agents: one fio server per load host, reached by one fio client per measurement.

- LocalAgent: `fio --server` on this machine, optionally inside a network namespace
  (a lab host). It listens on a unix socket, so the client's control traffic never
  crosses the lab's measured links and the socket is reachable from any namespace.
- SshAgent (engine/sshagent.py): `fio --server` started on a remote machine over ssh, on a Unix socket in a 0700
  directory there, reached only through the ssh connection; it stops when protolab closes the connection.
- ExistingAgent: a fio server that is already running (`fio://HOST[:PORT]`): trusted, as the operator named it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import ToolError
from ..proc import Runner

if TYPE_CHECKING:  # only for annotations: telemetry is not needed to run fio
    from ..telemetry.cgroups import RoleCgroups

FIO_PORT = 8765
CONNECT_TIMEOUT_S = 5.0


class Agent:
    """A fio server for one load host."""

    name: str

    def start(self) -> None:
        """Start the server (no-op for servers that already run)."""

    def stop(self) -> None:
        """Stop what start() started; safe to call twice."""

    def client_arg(self) -> str:
        """The value of fio's --client= for this server."""
        raise NotImplementedError

    def matches(self, hostname: str, port: int | None) -> bool:
        """Whether fio's client_stats entry (hostname, port) came from this server."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for logs and the manifest."""
        raise NotImplementedError

    def pid(self) -> int | None:
        """The local process id of the server, if it runs on this machine."""
        return None

    def check(self) -> None:
        """Raise ToolError naming the host and why when its fio server cannot be reached."""
        raise NotImplementedError


def _connect(family: int, address, timeout: float) -> str | None:
    """None if a connection succeeds, else the reason."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(address)
        return None
    except OSError as e:
        return e.strerror or str(e)


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    # agents start in their own session: the group holds fio and the children it forks per connection
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _end(p: subprocess.Popen, grace: float) -> None:
    """Terminate ``p``'s process group, and kill it if ``p`` has not exited after ``grace`` seconds."""
    _signal_group(p, signal.SIGTERM)
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(p, signal.SIGKILL)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # stuck in uninterruptible I/O: teardown goes on without it
            pass
    _signal_group(p, signal.SIGKILL)  # forked children that outlived their parent


def _wait_until(check, timeout: float, proc: subprocess.Popen | None, what: str = "the fio server") -> str | None:
    end = time.monotonic() + timeout
    why = "not started"
    while time.monotonic() < end:
        why = check()
        if why is None:
            return None
        if proc is not None and proc.poll() is not None:
            return f"{what} exited with code {proc.returncode}"
        time.sleep(0.05)
    return why


@dataclass
class LocalAgent(Agent):
    """fio --server on this machine (in ``netns`` when given), on a unix socket."""

    name: str
    fio: str
    socket_path: Path
    runner: Runner
    netns: str | None = None
    log: Path | None = None
    cgroups: RoleCgroups | None = None  # telemetry.cgroups.RoleCgroups: the server runs in its "loadgen" cgroup
    _proc: subprocess.Popen | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        if self.log:
            self.log.parent.mkdir(parents=True, exist_ok=True)
        if self.socket_path.exists():
            self.socket_path.unlink()
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        argv, netns = [self.fio, f"--server=sock:{self.socket_path}"], self.netns
        if self.cgroups is not None:  # the shell execs (ip netns exec, which execs) fio: the pid stays fio's
            argv, netns = self.cgroups.wrap("loadgen", argv, netns), None
        self._proc = self.runner.spawn(argv, netns=netns,
                                       stdout=out, stderr=subprocess.STDOUT)
        why = _wait_until(lambda: self._reach(1.0), 15.0, self._proc)
        if why:
            self.stop()
            raise ToolError(f"host {self.name}: its fio server did not start ({why}); see {self.log or 'its log'}")

    def _reach(self, timeout: float) -> str | None:
        if not self.socket_path.exists():
            return "no socket yet"
        return _connect(socket.AF_UNIX, str(self.socket_path), timeout)

    def stop(self) -> None:
        p, self._proc = self._proc, None
        if p is not None:
            _end(p, 5)
        if self.socket_path.exists():
            self.socket_path.unlink()

    def client_arg(self) -> str:
        # relative: the client runs in the socket directory, and fio appends this name to log files
        return f"sock:{self.socket_path.name}"

    def matches(self, hostname: str, port: int | None) -> bool:
        return hostname in (self.socket_path.name, str(self.socket_path))

    def describe(self) -> str:
        where = f"netns {self.netns}" if self.netns else "this machine"
        return f"{self.name}: fio server on {where} (socket {self.socket_path})"

    def pid(self) -> int | None:
        # `ip netns exec` execs fio, so the spawned pid is fio's own
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def check(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            raise ToolError(f"host {self.name}: its fio server has exited (code {self._proc.returncode}); "
                            f"see {self.log or 'its log'}")
        why = self._reach(CONNECT_TIMEOUT_S)
        if why:
            raise ToolError(f"host {self.name}: cannot reach its fio server at {self.socket_path}: {why}")


@dataclass
class ExistingAgent(Agent):
    """A fio server that already runs at HOST:PORT (fio://HOST[:PORT] in the plan)."""

    name: str
    host: str
    port: int = FIO_PORT

    @classmethod
    def from_url(cls, name: str, url: str) -> "ExistingAgent":
        """From 'fio://HOST[:PORT]'."""
        u = urlsplit(url)
        if not u.hostname:
            raise ToolError(f"host {name}: agent {url!r} has no host; write fio://HOST[:PORT]")
        return cls(name, u.hostname, u.port or FIO_PORT)

    def client_arg(self) -> str:
        return f"{self.host},{self.port}"

    def matches(self, hostname: str, port: int | None) -> bool:
        return hostname == self.host and (port is None or port == self.port)

    def describe(self) -> str:
        return f"{self.name}: fio server at {self.host}:{self.port}"

    def check(self) -> None:
        why = _connect(socket.AF_INET6 if ":" in self.host else socket.AF_INET, (self.host, self.port),
                       CONNECT_TIMEOUT_S)
        if why:
            raise ToolError(f"host {self.name}: cannot reach its fio server at {self.host}:{self.port}: {why}; "
                            f"start 'fio --server' there or fix the address")


def ssh_config() -> list[str]:
    """``-F FILE`` for the operator's ssh config ($PROTOLAB_SSH_CONFIG), never a plan's: ssh runs what a config
    says (ProxyCommand, Match exec) as root, so the file must be root's or the invoking user's, and theirs alone."""
    path = os.environ.get("PROTOLAB_SSH_CONFIG")
    if not path:
        return []
    import stat

    from ..errors import ProtolabError
    from ..trust import invoking_user

    try:
        st = os.lstat(path)
    except OSError as e:
        raise ProtolabError(f"PROTOLAB_SSH_CONFIG={path}: cannot read it ({e.strerror})") from None
    owners = {0, invoking_user()[0]}
    if not stat.S_ISREG(st.st_mode) or st.st_uid not in owners or st.st_mode & 0o022:
        raise ProtolabError(f"PROTOLAB_SSH_CONFIG={path}: must be a regular file (not a symlink) owned by root or "
                            "you and writable by nobody else")
    return ["-F", os.path.abspath(path)]


#: protolab's own ssh options, after the operator's config and a plan's options (ssh keeps an option's first value)
SSH_DEFAULTS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


def ssh_destination(url: str) -> tuple[str, int | None]:
    """'ssh://[USER@]HOST[:PORT]' (a plan's agent, checked by plan.hosts) → ('[USER@]HOST', PORT or None)."""
    u = urlsplit(url)
    return (f"{u.username}@{u.hostname}" if u.username else str(u.hostname)), u.port
