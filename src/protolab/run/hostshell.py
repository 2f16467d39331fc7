"""A plan host's shell: one fixed script run on this machine (``sh -c``) or over the host's ssh connection.

The one adapter through which protolab runs commands on a load host other than fio (doctor --hosts' checks, the
attach and detach of run.attaching). A script is protolab's own text; every plan value in it is checked by
plan.attach and quoted with shlex before it gets there. ssh runs with ``-n`` (it reads none of protolab's stdin),
the operator's config ($PROTOLAB_SSH_CONFIG), then the plan's options, then protolab's defaults: ssh keeps the
first value of each option.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..errors import ProtolabError, ToolError
from ..plan.model import LoadHost
from ..proc import Completed, Runner

#: what an unreachable host's one line says it took too long to answer
NO_ANSWER = "no answer within {timeout:g} s"


class Unreachable(ToolError):
    """The host did not answer (``why``: ssh's own words, or the time waited); one line, with what to check."""

    def __init__(self, message: str, why: str):
        super().__init__(message)
        self.why = why


@dataclass(frozen=True)
class HostShell:
    """How to run a script on host ``name``: ``argv`` + [script]; ``where`` names it for a person."""

    name: str
    argv: tuple[str, ...]
    where: str
    ssh: bool

    @classmethod
    def of(cls, host: LoadHost) -> "HostShell":
        """This machine for agent "local", else the host's ssh connection (fio:// hosts run no commands)."""
        if host.agent == "local":
            return cls(host.name, ("sh", "-c"), "this machine", False)
        if not host.agent.startswith("ssh://"):
            raise ProtolabError(f"host {host.name}: a {host.agent.split(':', 1)[0]}:// host runs no command for "
                                "protolab; give it agent = \"ssh://[USER@]HOST\"")
        from ..engine.agents import SSH_DEFAULTS, ssh_config, ssh_destination

        dest, port = ssh_destination(host.agent)
        argv = ("ssh", "-n", *ssh_config(), *host.ssh_options, *SSH_DEFAULTS, *(("-p", str(port)) if port else ()),
                dest)
        return cls(host.name, argv, dest, True)

    def run(self, runner: Runner, script: str, *, timeout: float, netns: str | None = None) -> Completed:
        """The script's outcome (any exit code); ToolError in one line when the host cannot be reached or does not
        answer in time (never quoting the script)."""
        try:
            done = runner.run([*self.argv, self.remote(script)], netns=netns if self.ssh else None, check=False,
                              timeout=timeout)
        except ProtolabError as e:
            why = NO_ANSWER.format(timeout=timeout) if "did not finish" in str(e) else str(e).splitlines()[0][:200]
            raise Unreachable(f"host {self.name}: {why}; check {self.reach_command()!r}", why) from None
        if self.ssh and done.returncode == 255:
            why = f"ssh failed ({done.one_line_error()})"
            raise Unreachable(f"host {self.name}: {why}; check {self.reach_command()!r} (keys, host name, port)", why)
        return done

    def remote(self, script: str) -> str:
        """The last word of the command: the script itself for ``sh -c``; over ssh, ``sh -c 'SCRIPT'``, so that
        the host's login shell only starts sh (a POSIX-like one: sh, bash, dash, ksh, zsh; csh takes no newline
        inside quotes)."""
        return f"sh -c {shlex.quote(script)}" if self.ssh else script

    def reach_command(self) -> str:
        """The command a person runs to see whether the host answers."""
        return f"ssh {self.port_words()}{self.where} true" if self.ssh else "sh -c true"

    def by_hand(self, script: str) -> str:
        """The exact command a person runs to do ``script`` on this host, in one line: protolab's own argv (the
        plan's ssh options and the operator's config included) with the script's lines joined by '; '."""
        one_line = "; ".join(ln.strip() for ln in script.splitlines() if ln.strip())
        return shlex.join([*(a for a in self.argv if a != "-n"), self.remote(one_line)])

    def port_words(self) -> str:
        if "-p" in self.argv:
            return f"-p {self.argv[self.argv.index('-p') + 1]} "
        return ""
