"""Testbeds: the system under test a session drives, behind one interface.

A testbed answers what the cell loop needs and nothing else: bring up; where
stream *s* of host *h* reaches a configuration's target (`access`) and where that
host's fio runs (`host`); set the link for a cell; snapshot and restore; which
processes, interfaces and cgroups telemetry watches (`window`); tear down. Two
kinds exist today — this machine and the user's hosts (`Testbed`), and the
embedded lab (`run.labbed.LabTestbed`) — and the session never asks which one
it drives.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..engine.agents import Agent, ExistingAgent, LocalAgent
from ..engine.fio import Fio
from ..engine.jobfile import Stream
from ..engine.measure import HostRun
from ..engine.sshagent import SshAgent
from ..engine.targets import Access, check_overwrite, resolve
from ..errors import ProtolabError, ToolError
from ..plan.model import Configuration, Plan
from ..plan.target_grammar import parse_target
from ..proc import Runner
from ..safepath import inside
from ..telemetry.cgroups import RoleCgroups
from ..telemetry.telemetry_window import Window
from ..trust import private_base
from .attachments import Attachments
from .progress import Progress
from .sessionmark import SessionMark, new_agents_dir
from .steps import every_step  # noqa: F401  (re-exported: the testbeds' teardown)


def checked_targets(plan: Plan, runner: Runner) -> dict[str, Access]:
    """How fio reaches each configuration's non-lab target, after the overwrite rules (engine.targets); the same
    check for `validate` and `run`. With ssh or fio agents the target lives on the load hosts: nothing here is
    looked at or created for it, and it needs allow_overwrite."""
    remote = any(h.agent != "local" for h in plan.hosts)
    out = {}
    for c in plan.configurations:
        t = plan.target_of(c)
        if t.attach is not None:  # found once attached (plan.preflight and run.attaching check it)
            continue
        if parse_target(t.url).lab:
            continue
        a = resolve(t.url, size=t.size or plan.method.data_size, ioengine=c.ioengine, direct=c.direct,
                    remote=remote)
        check_overwrite(a, allow_overwrite=t.allow_overwrite, runner=runner, label=f"configuration {c.name!r}")
        out[c.name] = a
    return out


class Testbed:
    """This machine, or the plan's [[hosts]]: targets are paths and URLs the plan names.

    Lifecycle: `check()` (before anything is created), `up(run_path)`, then cells, then `down()`.
    """

    kind = "local"

    def __init__(self, plan: Plan, fio: Fio, runner: Runner, progress: Progress):
        self.plan, self.fio, self.runner, self.progress = plan, fio, runner, progress
        self.kind = "hosts" if plan.hosts else "local"
        self.run_path: Path | None = None
        self.cgroups: RoleCgroups | None = None
        self.agents: dict[str, Agent] = {}
        self.sockets: Path | None = None
        self._local: dict[str, Access] = {}
        self.on_agents: Callable[[list[str]], None] | None = None  # told when the set of agents changes
        self.attachments = Attachments(plan, runner, progress)
        self.mark: SessionMark | None = None  # the session's mark (Study gives it before `up`)

    # -- before anything is created ----------------------------------------------------------------

    def check(self) -> None:
        """Refuse targets that hold data the plan did not opt in to overwrite (creates nothing)."""
        self._local.update(checked_targets(self.plan, self.runner))

    # -- life --------------------------------------------------------------------------------------

    def up(self, run_path: Path) -> dict[str, Any]:
        """Bring the testbed up for a run writing to ``run_path``; returns what the manifest records."""
        self.run_path = run_path
        # fio servers' sockets (local ones, and ssh forwards of remote ones) where only root can reach them
        private_base()
        sockets = new_agents_dir()
        self.note_made(agents=str(sockets))
        os.mkdir(sockets, 0o700)
        self.sockets = sockets
        self.cgroups = self._make_cgroups(run_path)
        self.fio = replace(self.fio, cgroups=self.cgroups)
        if self.cgroups is not None and self.plan.method.cpu_priority == "high":
            self.cgroups.prioritise(harness_pid=os.getpid())  # this process reads the roles' counters
        if self.attachments.wanted:
            self.attachments.up(run_path)
        return self.describe()

    def _make_cgroups(self, run_path: Path) -> RoleCgroups | None:
        cg = RoleCgroups(f"run-{run_path.name}")
        if cg.available:
            self.note_made(cgroup=str(cg.group))
        return cg if cg.available and cg.create() else None

    def note_made(self, **made: str) -> None:
        """Note in the session's mark (run.sessionmark) what is about to be made, so that a later session removes it
        if this one is killed before its teardown."""
        mark = getattr(self, "mark", None)
        if mark is not None:
            mark.note(**made)

    def describe(self) -> dict[str, Any]:
        """The testbed as the manifest records it (compared on resume)."""
        hosts = [h.name for h in self.plan.hosts] or ["this machine"]
        return {"kind": self.kind, "hosts": hosts}

    def stop_agents(self) -> None:
        """Stop every fio server this testbed started (each, whatever the others do)."""
        agents = list(self.agents.values())
        self.agents.clear()
        every_step([agent.stop for agent in agents])

    def down(self, keep_logs_in: Path | None = None) -> None:
        """Stop agents and remove what `up` made. Safe to call twice, and after a failed `up`. Every step runs
        even when one before it fails; the failures are raised together at the end."""
        cgroups, sockets = self.cgroups, self.sockets
        attachments = getattr(self, "attachments", None)  # a testbed whose __init__ never ran has none
        self.cgroups = self.sockets = None
        every_step([
            self.stop_agents,
            lambda: attachments is not None and attachments.down(),  # after fio's servers: none holds a device
            lambda: cgroups is not None and cgroups.priority.leave(),  # this process back, before anything goes
            lambda: sockets is not None and shutil.rmtree(sockets, ignore_errors=True),
            lambda: cgroups is not None and cgroups.remove(),
        ])

    # -- cells -------------------------------------------------------------------------------------

    def access(self, c: Configuration, host: int, stream: int) -> Access:
        """How stream ``stream`` of host ``host`` reaches configuration ``c``'s target."""
        t = self.plan.target_of(c)
        attached = self.attachments.access(c, host, stream, t.size or self.plan.method.data_size)
        return attached if attached is not None else self._local[c.name]

    def check_before_window(self, c: Configuration) -> None:
        """Right before a window of ``c`` or protolab's own writes to its data: ToolError (one line) when an
        attached target is no longer what was attached (a device name now another disk's, an NFS data file
        swapped for a link). One round trip per host that has it attached; nothing for other targets."""
        self.attachments.check(c)

    def data_access(self, c: Configuration) -> Access:
        """How protolab itself reaches ``c``'s data to prepare or initialise it (the load path, by default)."""
        return self.access(c, 0, 0)

    def target_label(self, c: Configuration) -> str:
        """``c``'s target in one line, for the manifest (an attached one as the plan asks it: its devices are each
        host's, listed in the manifest's ``attached`` once attached)."""
        attach = self.plan.target_of(c).attach
        return attach.describe() if attach is not None else self.access(c, 0, 0).describe()

    def host_runs(self, c: Configuration, h: int, total_hosts: int, streams: list[Stream]) -> list[HostRun]:
        """Where host ``h``'s streams run: one fio per host here; a VM testbed has one per VM."""
        return [self.host(c, h, total_hosts, streams)]

    def set_link(self, c: Configuration) -> None:
        """Make the links what configuration ``c`` asks for (nothing to do on real hosts)."""

    def set_sweep(self, values: dict[str, int]) -> None:
        """Set the swept coordinates of the next cell (plan.sweep: service_time, link_rate); only the lab sweeps
        (plan.sweep.check_sweep refuses a plan that asks another testbed)."""
        if values:
            raise ToolError(f"this testbed cannot set {', '.join(values)}: a sweep needs the embedded lab")

    def set_cpu(self, c: Configuration) -> None:
        """Cap the roles' CPU as configuration ``c`` asks (``cpu_limit``), lifting the last configuration's caps."""
        want = dict(c.cpu_limit)
        if want == getattr(self, "_cpu", {}):
            return
        if self.cgroups is None:
            raise ToolError(f"configuration {c.name}: cpu_limit needs role cgroups, which this machine does not "
                            "let protolab make; remove cpu_limit")
        try:
            self.cgroups.limit(want)
        except OSError as e:
            raise ToolError(f"configuration {c.name}: cpu_limit could not be set ({e.strerror or e}); this machine "
                            "needs a writable cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)") from e
        self._cpu = want

    def snapshot(self) -> None:
        """Keep the targets' state to restore before each cell (only the lab can)."""

    def restore(self) -> None:
        """Bring the targets back to the snapshot (only the lab can)."""

    def window(self) -> Window:
        """The telemetry window: what is sampled around each measured window."""
        return Window.of(self.runner, cgroups=self.cgroups)

    def host(self, c: Configuration, h: int, total_hosts: int, streams: list[Stream]) -> HostRun:
        """Host ``h`` of a cell: where its fio runs (directly, or through its fio server)."""
        if self.plan.hosts:
            spec = self.plan.hosts[h]
            if spec.agent == "local" and total_hosts == 1:
                return HostRun(spec.name, None, None, streams)
            if spec.agent == "local":
                make = lambda: LocalAgent(spec.name, self.fio.path, self._socket(spec.name), self.runner,
                                          log=self._agent_log(spec.name), cgroups=self.cgroups)
            elif spec.agent.startswith("ssh://"):
                make = lambda: SshAgent.from_plan(spec.name, spec.agent, spec.fio, self.runner,
                                                  self._socket(spec.name), extra_options=tuple(spec.ssh_options))
            else:
                make = lambda: ExistingAgent.from_url(spec.name, spec.agent)
            return HostRun(spec.name, self._agent(spec.name, make), None, streams)
        return self._namespace_host(f"local{h + 1}", streams[0].access.netns, total_hosts, streams)

    def _namespace_host(self, name: str, netns: str | None, total_hosts: int, streams: list[Stream]) -> HostRun:
        if total_hosts == 1:
            return HostRun(name, None, netns, streams)
        key = f"{name}@{netns or 'host'}"
        make = lambda: LocalAgent(name, self.fio.path, self._socket(f"{name}-{netns or 'host'}"), self.runner,
                                  netns=netns, log=self._agent_log(key), cgroups=self.cgroups)
        return HostRun(name, self._agent(key, make), netns, streams)

    def _socket(self, name: str) -> Path:
        assert self.sockets is not None, "testbed is not up"
        return self.sockets / f"{name}.sock"

    def _agent_log(self, key: str) -> Path:
        assert self.run_path is not None, "testbed is not up"
        return inside(self.run_path, "agents", f"{key}.log")

    def _agent(self, key: str, make: Callable[[], Agent]) -> Agent:
        agent = self.agents.get(key)
        if agent is None:
            agent = make()
            self.progress.note(f"starting {agent.describe()}")
            self.agents[key] = agent
            agent.start()
            if self.on_agents is not None:
                self.on_agents([a.describe() for a in self.agents.values()])
        agent.check()
        return agent

    def check_agents(self) -> None:
        """Raise (one line, which agent and why) if a fio server this run uses has died."""
        for agent in self.agents.values():
            agent.check()

    def problems(self) -> list[str]:
        """What is broken in the testbed right now (a dead fio server, a dead storage server), one phrase each."""
        out = []
        for agent in self.agents.values():
            try:
                agent.check()
            except ProtolabError as e:
                out.append(str(e))
        return out

    def storage_ports(self) -> list[str]:
        """Interfaces ('netns/ifname') on the storage side of the wire (none off the lab)."""
        return []

    def foreign_fields(self, c: Configuration) -> tuple[str, ...]:
        """Telemetry fields a window of ``c`` reads but that are not its figures (another path's counters)."""
        return ()

    def fault_controls(self, c: Configuration) -> tuple[object, str]:
        """The lab's fault controls and ``c``'s protocol (plan.faults); only the embedded lab has them."""
        raise ToolError("faults need the embedded lab (plan.faults.check_faults refuses other plans)")

    def capture_points(self, c: Configuration) -> tuple[str, object, list[tuple[str, str, str]]] | None:
        """method.breakdown: ``c``'s protocol, its dissector (plan.protocols.Dissector) and where to capture it —
        (role, namespace, interface) per point; None: no point here (only the embedded lab has them)."""
        return None

    def serves(self, c: Configuration) -> bool | None:
        """Whether ``c``'s I/O goes through the storage servers whose CPU is measured (None: not known)."""
        return None
