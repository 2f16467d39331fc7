"""A fio server started over ssh on a load host, listening on a Unix socket that only the ssh user can reach.

The remote script makes ``/tmp/protolab-fio.TOKEN`` (TOKEN chosen here; ``mkdir`` fails if anything has that
name), checks it (a directory, not a link, mode 0700, the user's own), starts ``fio --server=sock:DIR/fio.sock``,
checks that the socket is the user's and that the process holding it is the fio it started, prints one ``ready``
line and waits for the session to end; then it stops fio and removes the directory. Nothing listens on TCP there.

The ssh connection is a master (``ControlMaster``) whose control socket sits in protolab's private directory. The
fio socket is reached through it by OpenSSH's Unix-socket forwarding (``-O forward -L``); where the host's ssh
server has none (dropbear), by a relay: protolab listens on the local socket itself and, per connection, runs
``socat`` or OpenBSD ``nc -U`` on the host over a new session of the master, the connection as its stdin and stdout.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import shlex
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ToolError
from ..proc import Runner
from .agents import SSH_DEFAULTS, Agent, _end, ssh_config, ssh_destination

READY_TIMEOUT_S = 60.0  # ssh's connect, fio's start and the checks; a guest under TCG is slow
PROBE_S = 1.5  # how long a silent connection must stay open to count as reaching fio (once per start)
CHECK_PROBE_S = 0.2  # the same, before each cell: short, so a cell pays little for it

#: The remote script; shell variables d and fio are set in front of it. POSIX sh with busybox's applets (whose sh
#: runs its own nc, without -U, before any on PATH: hence nc.openbsd first).
REMOTE_SCRIPT = r"""s="$d/fio.sock"; made=; p=
say() { printf 'protolab-agent %s\n' "$*"; }
refuse() { say "refused: $*"; exit 1; }
end() {
  if [ -n "$p" ]; then kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; fi
  if [ -n "$made" ]; then rm -rf "$d"; fi
}
trap end EXIT
trap 'exit 1' HUP INT TERM
umask 077
mkdir -m 700 "$d" 2>/dev/null || refuse "cannot create $d (it exists, or /tmp is not writable)"
made=1
u=$(id -u)
set -- $(ls -ldn "$d")
[ -d "$d" ] && [ ! -L "$d" ] && [ "$1" = drwx------ ] && [ "$3" = "$u" ] || refuse "$d is not a 0700 dir of uid $u"
set -m 2>/dev/null
"$fio" --server=sock:"$s" </dev/null >"$d/fio.log" 2>&1 &
p=$!
i=0
while [ ! -S "$s" ]; do
  readlink "/proc/$p/exe" >/dev/null 2>&1 || refuse "fio did not start: $(head -n 2 "$d/fio.log" | tr '\n' ' ')"
  i=$((i + 1)); [ "$i" -le 600 ] || refuse "fio made no socket in 60 s"
  sleep 0.1 2>/dev/null || sleep 1
done
set -- $(ls -ldn "$s")
case "$1" in s*) ;; *) refuse "$s is not a socket" ;; esac
[ ! -L "$s" ] && [ "$3" = "$u" ] || refuse "$s is not a socket of uid $u"
exe=$(readlink "/proc/$p/exe") || refuse "fio (pid $p) has exited"
case "${exe##*/}" in fio*) ;; *) refuse "pid $p is $exe, not fio" ;; esac
ino=$(awk -v s="$s" '$NF == s { print $7; exit }' /proc/net/unix)
[ -n "$ino" ] && ls -l "/proc/$p/fd" 2>/dev/null | grep -q "socket:\[$ino\]" || refuse "pid $p does not hold $s"
relay=none
if command -v socat >/dev/null 2>&1; then relay=socat; else
  for n in nc.openbsd nc; do if "$n" -h 2>&1 | grep -q -e '-U'; then relay=$n; break; fi; done
fi
say "ready dir=$d pid=$p relay=$relay"
read -r _ || :
"""

_READY = re.compile(r"protolab-agent ready dir=(\S+) pid=([1-9][0-9]{0,9}) relay=(socat|nc\.openbsd|nc|none)")


@dataclass(frozen=True)
class Ready:
    """What the remote script reported: its socket's directory, fio's pid there, the relay tool it found."""

    dir: str
    pid: int
    relay: str

    @property
    def socket(self) -> str:
        return f"{self.dir}/fio.sock"


def remote_dir(token: str | None = None) -> str:
    """A fresh name for the remote socket's directory (unguessable, so no one can take it first)."""
    return f"/tmp/protolab-fio.{token or secrets.token_hex(8)}"


def remote_command(fio: str, directory: str) -> str:
    """The shell command the master's session runs on the host."""
    return f"d={shlex.quote(directory)}; fio={shlex.quote(fio)}\n{REMOTE_SCRIPT}"


def parse_ready(line: str | None, directory: str) -> Ready:
    """The script's ready line for ``directory``; ValueError saying why for anything else."""
    if line is None:
        raise ValueError("no answer")
    if line.startswith("protolab-agent refused: "):
        raise ValueError(line.removeprefix("protolab-agent refused: ")[:200])
    m = _READY.fullmatch(line.strip())
    if m is None:
        raise ValueError(f"unexpected answer {line[:80]!r}, not protolab's ready line")
    if m[1] != directory:
        raise ValueError(f"the server is in {m[1]}, not in {directory}, the directory protolab chose")
    return Ready(m[1], int(m[2]), m[3])


def relay_command(tool: str, sock: str) -> str:
    """The remote command that joins its stdio to the fio socket (nc -N: its input's end closes the connection)."""
    if tool == "socat":
        return f"socat - UNIX-CONNECT:{shlex.quote(sock)}"
    if tool in ("nc", "nc.openbsd"):
        return f"{tool} -N -U {shlex.quote(sock)}"
    raise ValueError(tool)


def choose_reach(forwarded: bool, relay: str) -> str:
    """'forward' when the ssh server forwards Unix sockets, else 'relay' when the host has a relay tool."""
    if forwarded:
        return "forward"
    if relay != "none":
        return "relay"
    raise ValueError("its ssh server does not forward Unix sockets and it has neither socat nor OpenBSD nc; "
                     "install socat or netcat-openbsd there")


def _answers(path: Path, timeout: float) -> str | None:
    """None when a fio server answers behind ``path``: the connection stays open for ``timeout`` (ssh, or the
    relay, closes it at once when the remote end cannot be reached)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            try:
                return "the remote end closed the connection" if s.recv(1) == b"" else None
            except socket.timeout:
                return None
    except OSError as e:
        return e.strerror or str(e)


def _read_line(p: subprocess.Popen, timeout: float) -> tuple[str | None, list[str]]:
    """The first line of ``p``'s output that starts with 'protolab-agent ' (None at its end or after
    ``timeout``), and the lines before it (a login shell's chatter)."""
    fd, buf, end = p.stdout.fileno(), b"", time.monotonic() + timeout
    while True:
        *lines, buf = buf.split(b"\n")
        other = []
        for raw in lines:
            text = raw.decode(errors="replace")
            if text.startswith("protolab-agent "):
                return text, other
            other.append(text)
        left = end - time.monotonic()
        if left <= 0 or len(buf) > 65536 or not select.select([fd], [], [], left)[0]:
            return None, other
        chunk = os.read(fd, 4096)
        if not chunk:
            return None, other
        buf += chunk


class _Relay:
    """Listens on the local socket; each connection gets an ssh session of its own running the remote relay
    tool, with the connection as that ssh's stdin and stdout."""

    def __init__(self, path: Path, argv: list[str], runner: Runner, netns: str | None):
        self.argv, self.runner, self.netns = argv, runner, netns
        self.procs: list[subprocess.Popen] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.sock.settimeout(0.2)  # how often the loop looks at the stop flag
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name=f"relay {path.name}", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.setblocking(True)
                try:
                    p = self.runner.spawn(self.argv, netns=self.netns, stdin=conn.fileno(), stdout=conn.fileno())
                except ToolError:
                    continue
            self.procs = [q for q in self.procs if q.poll() is None] + [p]

    def alive(self) -> bool:
        return self.thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()
        for p in self.procs:
            _end(p, 2)
        self.procs = []


@dataclass
class SshAgent(Agent):
    """fio --server started over ssh (ssh://[USER@]HOST[:SSH_PORT]) on a Unix socket in a fresh 0700 directory
    there, reached through the ssh connection at ``socket_path`` here; it stops when the connection closes."""

    name: str
    host: str
    socket_path: Path = Path()
    dest: str = ""
    ssh_port: int | None = None
    fio: str = "fio"
    runner: Runner | None = None
    netns: str | None = None  # where to run ssh from (tests drive namespaced hosts)
    ssh_options: tuple[str, ...] = SSH_DEFAULTS
    remote: Ready | None = field(default=None, init=False)
    reach: str = field(default="", init=False)  # 'forward' or 'relay', once started
    _master: subprocess.Popen | None = field(default=None, init=False, repr=False)
    _relay: _Relay | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_plan(cls, name: str, url: str, fio: str, runner: Runner, socket_path: Path,
                  netns: str | None = None, extra_options: tuple[str, ...] = ()) -> "SshAgent":
        """From 'ssh://[USER@]HOST[:SSH_PORT]'; reached here at ``socket_path`` (in a root-only directory)."""
        hostname = urlsplit(url).hostname
        if not hostname:
            raise ToolError(f"host {name}: agent {url!r} has no host; write ssh://[USER@]HOST[:PORT]")
        dest, ssh_port = ssh_destination(url)
        agent = cls(name, hostname, socket_path, dest=dest, ssh_port=ssh_port, fio=fio, runner=runner, netns=netns)
        agent.ssh_options = (*ssh_config(), *extra_options, *agent.ssh_options)  # ssh keeps an option's first value
        return agent

    @property
    def control_path(self) -> Path:
        return self.socket_path.with_suffix(".ctl")

    @property
    def _errors(self) -> Path:
        return self.socket_path.with_suffix(".ssh-errors")

    def _ssh(self, *args: str, master: bool = False) -> list[str]:
        # protolab's control options come first so that no config or plan option replaces them
        control = (["-o", "ControlMaster=yes", "-o", "ControlPersist=no"] if master
                   else ["-o", "ControlMaster=no"])
        return ["ssh", "-S", str(self.control_path), *control, *self.ssh_options,
                *(["-p", str(self.ssh_port)] if self.ssh_port else []), *args]

    def master_argv(self, directory: str) -> list[str]:
        """The master connection, whose session runs the remote script."""
        return self._ssh(self.dest, remote_command(self.fio, directory), master=True)

    def forward_argv(self, op: str, remote_socket: str) -> list[str]:
        """Ask the master to ``op`` ('forward' or 'cancel') the forward of ``socket_path`` to ``remote_socket``."""
        return self._ssh("-O", op, "-L", f"{self.socket_path}:{remote_socket}", self.dest)

    def relay_argv(self, ready: Ready) -> list[str]:
        """One relay session over the master."""
        return self._ssh(self.dest, relay_command(ready.relay, ready.socket))

    def start(self) -> None:
        assert self.runner is not None
        directory = remote_dir()
        for p in (self.socket_path, self.control_path):
            p.unlink(missing_ok=True)
        with open(self._errors, "w") as err:
            self._master = self.runner.spawn(self.master_argv(directory), netns=self.netns, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=err)
        line, _ = _read_line(self._master, READY_TIMEOUT_S)
        try:
            self.remote = parse_ready(line, directory)
            self.reach = choose_reach(self._forward(self.remote), self.remote.relay)
            if self.reach == "relay":
                self._relay = _Relay(self.socket_path, self.relay_argv(self.remote), self.runner, self.netns)
                why = _answers(self.socket_path, PROBE_S)
                if why:
                    raise ValueError(f"its {self.remote.relay} relay does not reach fio ({why})")
        except ValueError as e:
            why = str(e)
            if line is None:  # ssh itself failed, or the host's shell could not run the script
                why = (f"{self._ssh_error() or f'no answer in {READY_TIMEOUT_S:g} s'}; check "
                       f"'ssh {self.dest} {self.fio} --version'")
            self.stop()
            raise ToolError(f"host {self.name}: could not start fio over ssh to {self.dest}: {why}") from None

    def _forward(self, ready: Ready) -> bool:
        """Whether the master forwards ``socket_path`` to the remote socket (the ssh server may refuse each
        connection though it took the request, so a connection is tried)."""
        assert self.runner is not None
        done = self.runner.run(self.forward_argv("forward", ready.socket), netns=self.netns, check=False,
                               timeout=20)
        if done.returncode == 0 and _answers(self.socket_path, PROBE_S) is None:
            return True
        if done.returncode == 0:
            self.runner.run(self.forward_argv("cancel", ready.socket), netns=self.netns, check=False, timeout=20)
        self.socket_path.unlink(missing_ok=True)
        return False

    def _ssh_error(self) -> str:
        try:
            lines = [ln.strip() for ln in self._errors.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    def stop(self) -> None:
        relay, self._relay = self._relay, None
        if relay is not None:
            relay.close()
        p, self._master = self._master, None
        if p is not None:
            if p.poll() is None:
                try:  # end of input: the remote 'read' returns and the script stops fio and removes its directory
                    p.stdin.close()
                    p.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            _end(p, 10)
        for path in (self.socket_path, self.control_path, self._errors):
            path.unlink(missing_ok=True)

    def client_arg(self) -> str:
        return f"sock:{self.socket_path.name}"  # relative, as LocalAgent's: the client runs in the socket directory

    def matches(self, hostname: str, port: int | None) -> bool:
        return hostname in (self.socket_path.name, str(self.socket_path))

    def describe(self) -> str:
        where = f"{self.name}: fio server started over ssh on {self.dest}"
        if self.remote is None:
            return where
        how = "ssh's forwarding" if self.reach == "forward" else f"a relay ({self.remote.relay}) over ssh"
        return f"{where}, on a Unix socket in a 0700 directory there, reached by {how}"

    def check(self) -> None:
        if self._master is not None and self._master.poll() is not None:
            raise ToolError(f"host {self.name}: the ssh session to {self.dest} ended (code {self._master.returncode})")
        if self._relay is not None and not self._relay.alive():
            raise ToolError(f"host {self.name}: the relay to its fio server has stopped")
        why = _answers(self.socket_path, CHECK_PROBE_S) if self.socket_path.exists() else "no socket"
        if why:
            raise ToolError(f"host {self.name}: cannot reach its fio server through {self.socket_path}: {why}")
