"""SshAgent's logic with a fake ssh: the remote script's shape, its ready line, the choice of forward or relay."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
from pathlib import Path

import pytest

from protolab.engine.sshagent import (
    Ready,
    SshAgent,
    choose_reach,
    parse_ready,
    relay_command,
    remote_command,
    remote_dir,
)
from protolab.errors import ToolError
from protolab.proc import Completed

D = "/tmp/protolab-fio.0123456789abcdef"


def test_the_remote_script_serves_fio_on_a_unix_socket_in_a_fresh_directory_and_never_on_tcp():
    cmd = remote_command("/opt/my fio/fio", D)
    assert cmd.startswith(f"d={D}; fio='/opt/my fio/fio'\n")
    assert '--server=sock:"$s"' in cmd and "ip:" not in cmd and "127.0.0.1" not in cmd
    assert 'mkdir -m 700 "$d"' in cmd and "rm -rf" in cmd  # made atomically, removed at the end
    assert re.fullmatch(r"/tmp/protolab-fio\.[0-9a-f]{16}", remote_dir()) and remote_dir() != remote_dir()


def test_the_ready_line_is_parsed_and_anything_else_refused():
    assert parse_ready(f"protolab-agent ready dir={D} pid=4242 relay=nc.openbsd", D) == Ready(D, 4242, "nc.openbsd")
    assert parse_ready(f"protolab-agent ready dir={D} pid=7 relay=none\n", D).socket == f"{D}/fio.sock"
    bad = {
        None: "no answer",
        "protolab-agent refused: fio did not start: bad option": "fio did not start: bad option",
        "protolab-agent hello": "not protolab's ready line",
        f"protolab-agent ready dir={D} pid=0 relay=nc": "not protolab's ready line",
        f"protolab-agent ready dir={D} pid=12 relay=bash": "not protolab's ready line",
        f"protolab-agent ready dir={D} pid=12 relay=nc; rm -rf /": "not protolab's ready line",
        "protolab-agent ready dir=/tmp/other pid=12 relay=nc": "not in " + D,
    }
    for line, why in bad.items():
        with pytest.raises(ValueError, match=re.escape(why)):
            parse_ready(line, D)


def test_relay_commands_and_the_choice_between_forward_and_relay():
    assert relay_command("socat", f"{D}/fio.sock") == f"socat - UNIX-CONNECT:{D}/fio.sock"
    assert relay_command("nc", "/tmp/a b/fio.sock") == "nc -N -U '/tmp/a b/fio.sock'"
    assert choose_reach(True, "none") == "forward" and choose_reach(False, "socat") == "relay"
    with pytest.raises(ValueError, match="install socat or netcat-openbsd there"):
        choose_reach(False, "none")


class FakeSsh:
    """Plays ssh: the master prints ``answer`` (with the directory it was given) and waits; ``-O forward``
    succeeds by listening silently at the local path when ``forwards``; a relay session is ``cat`` (an echo)."""

    def __init__(self, answer: str, forwards: bool):
        self.answer, self.forwards = answer, forwards
        self.calls: list[list[str]] = []
        self.procs: list[subprocess.Popen] = []
        self.listener: socket.socket | None = None

    def run(self, argv, *, netns=None, check=True, input=None, timeout=None) -> Completed:
        self.calls.append(list(argv))
        if "-O" in argv and argv[argv.index("-O") + 1] == "forward":
            if not self.forwards:
                return Completed(tuple(argv), 255, "", "forwarding refused")
            self.listener = socket.socket(socket.AF_UNIX)
            self.listener.bind(argv[argv.index("-L") + 1].split(":")[0])
            self.listener.listen()
        return Completed(tuple(argv), 0, "", "")

    def spawn(self, argv, *, netns=None, stdout=None, stderr=None, stdin=None, cwd=None) -> subprocess.Popen:
        self.calls.append(list(argv))
        if "ControlMaster=yes" in argv:
            directory = shlex.split(argv[-1].split(";")[0])[0].removeprefix("d=")
            script = f"printf '%s\\n' {shlex.quote(self.answer.format(d=directory))}; cat >/dev/null"
        else:
            script = "exec cat"
        p = subprocess.Popen(["sh", "-c", script], stdin=stdin, stdout=stdout, stderr=stderr,
                             start_new_session=True)
        self.procs.append(p)
        return p


def _agent(tmp_path: Path, fake: FakeSsh) -> SshAgent:
    return SshAgent.from_plan("esx1", "ssh://root@esx1:2222", "/usr/bin/fio", fake, tmp_path / "esx1.sock",
                              extra_options=("-o", "ControlPath=/elsewhere"))


def _stopped(agent: SshAgent, fake: FakeSsh) -> None:
    assert all(p.poll() is not None for p in fake.procs)
    assert not agent.socket_path.exists() and not agent.control_path.exists()


def test_a_host_whose_ssh_cannot_forward_and_has_no_relay_tool_is_refused_in_one_line(tmp_path):
    fake = FakeSsh("protolab-agent ready dir={d} pid=99 relay=none", forwards=False)
    agent = _agent(tmp_path, fake)
    with pytest.raises(ToolError) as e:
        agent.start()
    assert "\n" not in str(e.value) and str(e.value).startswith("host esx1: could not start fio over ssh to root@esx1")
    assert str(e.value).endswith("install socat or netcat-openbsd there")
    master = fake.calls[0]
    # protolab's control options come before the plan's, so that ssh keeps them
    assert master[:6] == ["ssh", "-S", str(tmp_path / "esx1.ctl"), "-o", "ControlMaster=yes", "-o"]
    assert master.index("ControlPath=/elsewhere") > master.index("ControlMaster=yes")
    assert master[-3:-1] == ["2222", "root@esx1"] and "--server=sock:" in master[-1]
    _stopped(agent, fake)


class RefusedSsh(FakeSsh):
    """An ssh that cannot connect: its error on stderr, exit 255."""

    def spawn(self, argv, *, netns=None, stdout=None, stderr=None, stdin=None, cwd=None) -> subprocess.Popen:
        p = subprocess.Popen(["sh", "-c", "echo 'ssh: connect to host esx1 port 2222: Connection refused' >&2; "
                              "exit 255"], stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        self.procs.append(p)
        return p


def test_an_ssh_that_fails_is_named_with_what_to_check(tmp_path):
    fake = RefusedSsh("", forwards=True)
    agent = _agent(tmp_path, fake)
    with pytest.raises(ToolError) as e:
        agent.start()
    assert str(e.value) == ("host esx1: could not start fio over ssh to root@esx1: ssh: connect to host esx1 port "
                            "2222: Connection refused; check 'ssh root@esx1 /usr/bin/fio --version'")
    _stopped(agent, fake)


@pytest.mark.parametrize("answer, why", [
    ("protolab-agent refused: /tmp/protolab-fio.x is not a 0700 dir of uid 0", "is not a 0700 dir of uid 0"),
    ("protolab-agent ready dir=/tmp/protolab-fio.impostor pid=5 relay=nc", "not in /tmp/protolab-fio."),
])
def test_a_server_that_is_not_the_one_started_is_refused(tmp_path, answer, why):
    fake = FakeSsh(answer, forwards=True)
    agent = _agent(tmp_path, fake)
    with pytest.raises(ToolError, match=re.escape(why)):
        agent.start()
    assert not any("forward" in c for c in fake.calls)  # refused before anything is forwarded
    _stopped(agent, fake)


def test_forwarding_is_used_when_the_ssh_server_has_it(tmp_path):
    # a login shell's chatter before the ready line is passed over
    fake = FakeSsh("Last login: never\nprotolab-agent ready dir={d} pid=99 relay=nc", forwards=True)
    agent = _agent(tmp_path, fake)
    agent.start()
    try:
        assert agent.reach == "forward" and agent.remote is not None
        forward = next(c for c in fake.calls if "-O" in c)
        assert forward[forward.index("-L") + 1] == f"{agent.socket_path}:{agent.remote.dir}/fio.sock"
        assert "reached by ssh's forwarding" in agent.describe()
        agent.check()
    finally:
        agent.stop()
        fake.listener.close()
    _stopped(agent, fake)


def test_the_relay_carries_each_connection_over_its_own_ssh_session(tmp_path):
    fake = FakeSsh("protolab-agent ready dir={d} pid=99 relay=nc.openbsd", forwards=False)
    agent = _agent(tmp_path, fake)
    agent.start()
    try:
        assert agent.reach == "relay" and "a relay (nc.openbsd) over ssh" in agent.describe()
        assert ["-O", "cancel"] not in [c[c.index("-O"):c.index("-O") + 2] for c in fake.calls if "-O" in c]
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(agent.socket_path))
            s.sendall(b"ping")
            assert s.recv(4) == b"ping"
        relay = fake.calls[-1]
        assert relay[relay.index("ControlMaster=no") - 1] == "-o" and relay[-2] == "root@esx1"
        assert relay[-1] == f"nc.openbsd -N -U {agent.remote.dir}/fio.sock"
        agent.check()
    finally:
        agent.stop()
    _stopped(agent, fake)
