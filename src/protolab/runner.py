"""Running a study: check targets, bring up the lab, start agents, prepare and initialise data, measure.

The order of work: nothing is created until every target has passed the
overwrite check; then the run directory; then the lab; then the agents (one fio
server per load host); then each target is filled once and, if the plan says
so, initialised and snapshotted; then the cells, configurations interleaved at
each load point. Per cell: restore (if asked), set the link, warm up (fixed, or
until steady by the SNIA rule), then one measured window with telemetry around
it. A failure or Ctrl-C stops the run, stops the agents, tears the lab down, and
leaves every cell measured so far on disk with the manifest saying how it ended.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from .analysis.derived import derive
from .analysis.steady import steady_state
from .engine.agents import Agent, ExistingAgent, LocalAgent, SshAgent
from .engine.fio import Fio
from .engine.jobfile import Stream, layout, render_prepare
from .engine.measure import HostRun, measure
from .engine.parse import host_key, parse_fio_json
from .engine.targets import Access, check_overwrite, create_file, resolve
from .errors import PlanError, ProtolabError, ToolError
from .plan.expand import Cell, expand
from .plan.library import BUILTIN_WORKLOADS
from .plan.model import Configuration, LoadPoint, Plan
from .plan.preflight import Environment, preflight
from .proc import Runner, SubprocessRunner
from .results.records import CellRecord
from .safepath import inside
from .results.rundir import RunDir, now, provenance
from .telemetry.cgroups import RoleCgroups
from .telemetry.window import Window

FIO_MARGIN_S = 120.0  # time fio may take beyond its runtime (connect, lay out, exit)


class Progress(Protocol):
    """What the runner tells whoever shows progress."""

    def start(self, total: int, seconds_per_cell: float) -> None: ...
    def cell(self, index: int, cell: Cell) -> None: ...
    def iops(self, value: float) -> None: ...
    def done(self, record: CellRecord) -> None: ...
    def note(self, message: str) -> None: ...


class _Silent:
    def start(self, total, seconds_per_cell): pass
    def cell(self, index, cell): pass
    def iops(self, value): pass
    def done(self, record): pass
    def note(self, message): pass


@dataclass
class Study:
    """One run of a plan."""

    plan: Plan
    plan_text: str
    source: str
    results_root: Path = Path("results")
    fio: Fio | None = None
    runner: Runner = field(default_factory=SubprocessRunner)
    progress: Progress = field(default_factory=_Silent)
    on_cell: Callable[[str, Cell, Any], None] | None = None  # (stage: start|ready|done, cell, lab)
    lab_workdir: Path | None = None

    def run(self) -> RunDir:
        """Measure the whole matrix; returns the run directory."""
        plan = self.plan
        self._fio = fio = self.fio or Fio.locate(self.runner)
        workdir = self.lab_workdir
        if plan.uses_lab() and workdir is None:
            from .lab import default_workdir

            workdir = default_workdir(plan.lab.prefix)
        preflight(plan, self.source, Environment.of_machine(fio.engines(), workdir))
        self._local = self._local_accesses()  # checked before anything is created
        cells = expand(plan)
        rundir = RunDir.create(self.results_root, plan.name, {
            "status": "running", "plan_source": self.source, "plan": plan.model_dump(mode="json"),
            "plan_text": self.plan_text, "provenance": provenance(fio.version(), fio.engines(), fio.path),
            "started": now(), "ended": None, "cells_total": len(cells),
        })
        self.rundir = rundir
        self.lab = None
        self._cgroups: RoleCgroups | None = None
        self._agents: dict[str, Agent] = {}
        self._sockets = Path(tempfile.mkdtemp(prefix="pl-agents-"))
        try:
            if plan.uses_lab():
                self.lab = self._lab_up(rundir)
            self._cgroups = self._role_cgroups(rundir)
            self._fio = fio = replace(fio, cgroups=self._cgroups)
            self._window = self._telemetry()
            rundir.update_manifest(targets={c.name: self._access(c, 0, 0).describe() for c in plan.configurations})
            if plan.method.prepare:
                self._prepare()
            if plan.method.initialise is not None:
                self._initialise()
            if self.lab is not None and (plan.method.restore or plan.method.initialise is not None):
                self.lab.snapshot()  # every cell restores to this state
                rundir.update_manifest(snapshot=now())
            self._measure(cells)
        except KeyboardInterrupt:
            rundir.update_manifest(status="interrupted", ended=now())
            raise
        except ProtolabError as e:
            rundir.update_manifest(status="failed", error=str(e), ended=now())
            n = len(rundir.records())
            raise ProtolabError(f"{e} ({n} cell{'s' if n != 1 else ''} measured before this are in "
                                f"{rundir.path})") from None
        finally:
            for agent in self._agents.values():
                agent.stop()
            shutil.rmtree(self._sockets, ignore_errors=True)
            if self.lab is None and self._cgroups is not None:
                self._cgroups.remove()  # a lab's own are removed with the lab
            if self.lab is not None:
                self.progress.note("tearing the lab down")
                self.lab.down(keep_logs_in=self.rundir.path / "lab-logs")
        rundir.update_manifest(status="complete", ended=now())
        return rundir

    # -- checks and targets ----------------------------------------------------------------------

    def _local_accesses(self) -> dict[str, Access]:
        """Access for every non-lab configuration, after the overwrite check."""
        out = {}
        for c in self.plan.configurations:
            t = self.plan.target_of(c)
            if t.url.startswith("lab:"):
                continue
            a = resolve(t.url, size=t.size or self.plan.method.data_size, ioengine=c.ioengine, direct=c.direct)
            check_overwrite(a, allow_overwrite=t.allow_overwrite, runner=self.runner,
                            label=f"configuration {c.name!r}")
            out[c.name] = a
        return out

    def _protocol(self, c: Configuration) -> str | None:
        url = self.plan.target_of(c).url
        return url.split(":", 1)[1] if url.startswith("lab:") else None

    def _access(self, c: Configuration, host: int, stream: int) -> Access:
        """How stream ``stream`` of host ``host`` reaches configuration ``c``'s target (its path)."""
        protocol = self._protocol(c)
        if protocol is None:
            return self._local[c.name]
        nics = self.plan.lab.nics_per_host if self.plan.lab is not None else 1
        nic = stream % nics if c.path_policy == "round-robin" else 0
        ep = self.lab.endpoint(protocol, host=host, nic=nic)
        t = self.plan.target_of(c)
        return resolve(ep.url, size=min(ep.size_bytes, t.size or ep.size_bytes), ioengine=c.ioengine,
                       direct=c.direct, netns=ep.netns, owned=True)

    def _lab_up(self, rundir: RunDir):
        protocols = {p for c in self.plan.configurations if (p := self._protocol(c))}
        self.progress.note(f"bringing the lab up ({', '.join(sorted(protocols))})")
        from .lab import Lab, default_workdir  # imported only when a plan uses the lab

        lab = Lab(self.plan.lab, protocols, self.lab_workdir or default_workdir(self.plan.lab.prefix), self.runner)
        self.lab = lab
        lab.up()
        rundir.update_manifest(lab=lab.describe())
        return lab

    def _role_cgroups(self, rundir: RunDir) -> RoleCgroups | None:
        """CPU per role: the lab's cgroups, or the run's own (removed at its end); None where none can be made."""
        if self.lab is not None:
            return self.lab.cgroups
        cg = RoleCgroups(f"run-{rundir.run_id}")
        return cg if cg.available and cg.create() else None

    def _telemetry(self) -> Window:
        if self.lab is None:
            return Window(self.runner, cgroups=self._cgroups)
        storage = [(n, i) for n, i in self.lab.interfaces() if n == self.lab.names.storage_ns]
        return Window(self.runner, server_pids=self.lab.server_pids(), interfaces=self.lab.interfaces(),
                      cgroups=self._cgroups, offload_ports=storage)

    def _storage_ports(self) -> list[str]:
        if self.lab is None:
            return []
        ns = self.lab.names.storage_ns
        return [f"{n}/{i}" for n, i in self.lab.interfaces() if n == ns]

    # -- hosts and agents ------------------------------------------------------------------------

    def _agent(self, key: str, make: Callable[[], Agent]) -> Agent:
        agent = self._agents.get(key)
        if agent is None:
            agent = make()
            self.progress.note(f"starting {agent.describe()}")
            agent.start()
            self._agents[key] = agent
            self.rundir.update_manifest(agents=[a.describe() for a in self._agents.values()])
        agent.check()
        return agent

    def _host(self, c: Configuration, h: int, total_hosts: int, streams: list[Stream]) -> HostRun:
        """Host ``h`` of a cell: where its fio runs (directly, or through its fio server)."""
        fio = self._fio
        if self.plan.hosts:
            spec = self.plan.hosts[h]
            if spec.agent == "local" and total_hosts == 1:
                return HostRun(spec.name, None, None, streams)
            if spec.agent == "local":
                make = lambda: LocalAgent(spec.name, fio.path, self._sockets / f"{spec.name}.sock", self.runner,
                                          log=inside(self.rundir.path, "agents", f"{spec.name}.log"),
                                          cgroups=self._cgroups)
            elif spec.agent.startswith("ssh://"):
                make = lambda: SshAgent.from_plan(spec.name, spec.agent, spec.fio, spec.fio_port, self.runner,
                                                  extra_options=tuple(spec.ssh_options))
            else:
                make = lambda: ExistingAgent.from_url(spec.name, spec.agent)
            return HostRun(spec.name, self._agent(spec.name, make), None, streams)
        netns = streams[0].access.netns
        name = f"h{h + 1}" if self.lab is not None else f"local{h + 1}"
        if total_hosts == 1:
            return HostRun(name, None, netns, streams)
        key = f"{name}@{netns or 'host'}"
        sock = self._sockets / f"{name}-{netns or 'host'}.sock"
        make = lambda: LocalAgent(name, fio.path, sock, self.runner, netns=netns,
                                  log=inside(self.rundir.path, "agents", f"{key}.log"), cgroups=self._cgroups)
        return HostRun(name, self._agent(key, make), netns, streams)

    def _hosts(self, cell: Cell) -> list[HostRun]:
        c = cell.configuration
        per_host = layout(cell, lambda h, g: self._access(c, h, g))
        return [self._host(c, h, len(per_host), s) for h, s in enumerate(per_host)]

    # -- work ------------------------------------------------------------------------------------

    def _distinct_targets(self) -> dict[str, Configuration]:
        out: dict[tuple, Configuration] = {}
        for c in self.plan.configurations:
            a = self._access(c, 0, 0)
            out.setdefault((a.kind, a.filename, a.options.get("uri"), a.options.get("nfs_url"), a.netns), c)
        return {c.name: c for c in out.values()}

    def _prepare(self) -> None:
        """Fill each distinct target once, so that reads touch real data."""
        for name, c in self._distinct_targets().items():
            a = self._access(c, 0, 0)
            self.progress.note(f"preparing {a.describe()}")
            if a.kind == "file" and a.local_path is not None:
                create_file(a.local_path, a.size)
            job = self.rundir.job_path(f"prepare__{name}")
            job.write_text(render_prepare(a))
            self._fio.run_job(job, self.rundir.raw_path(f"prepare__{name}"), netns=a.netns, timeout=1800,
                              label=f"preparing target of {name!r}")

    def _initialise(self) -> None:
        """Run the initialisation access spec on every target once, then snapshot the pool."""
        init = self.plan.method.initialise
        assert init is not None
        workload = BUILTIN_WORKLOADS[init.workload]
        done = {}
        for name, c in self._distinct_targets().items():
            self.progress.note(f"initialising the target of {name!r}: {init.workload} for {init.duration:g}s")
            cell = Cell(c, workload, LoadPoint(streams=init.streams), -1, 0)
            streams = [s for h in layout(cell, lambda h, g: self._access(c, 0, g)) for s in h]
            m = measure(self._fio, cell, [HostRun("init", None, streams[0].access.netns, streams)],
                        runtime=init.duration, folder=self.rundir.path / "raw", tag="initialise",
                        timeout=init.duration + FIO_MARGIN_S, label=f"initialising {name!r}")
            done[name] = round(parse_fio_json(m.json_text).iops, 1)
        self.rundir.update_manifest(initialised={"workload": init.workload, "duration_s": init.duration,
                                                 "iops": done})

    def _warmup(self, cell: Cell, hosts: list[HostRun]) -> dict[str, Any]:
        """Warm up for a fixed time, or until IOPS is steady (SNIA PTS) or the maximum is reached."""
        m = self.plan.method
        if m.warmup <= 0:
            return {"mode": "none"}
        series: list[float] = []
        elapsed, k = 0.0, 0
        chunk = m.warmup if not m.warmup_until_steady else float(m.steady_window + 2)
        verdict = None
        while elapsed < m.warmup - 1e-9:
            run = max(1.0, min(chunk, m.warmup - elapsed))
            meas = measure(self._fio, cell, hosts, runtime=run, folder=self.rundir.path / "raw",
                           tag=f"warmup{k}", extra=cell.configuration.fio, on_iops=self.progress.iops,
                           timeout=run + FIO_MARGIN_S, label=f"cell {cell.id} (warm-up)", socket_dir=self._sockets)
            series += meas.series
            elapsed += run
            k += 1
            if len(series) >= m.steady_window:
                verdict = steady_state(series, window=m.steady_window)
                if m.warmup_until_steady and verdict.steady:
                    break
        out: dict[str, Any] = {
            "mode": "until-steady" if m.warmup_until_steady else "fixed",
            "warmup_s": elapsed,
            "series": series,
            "steady_at_end": None if verdict is None else verdict.steady,
        }
        if m.warmup_until_steady:
            out["ended_by"] = "steady" if verdict is not None and verdict.steady else "maximum"
        if verdict is not None:
            out["verdict"] = asdict(verdict)
        return out

    def _measure(self, cells: list[Cell]) -> None:
        m = self.plan.method
        self.progress.start(len(cells), m.warmup + m.duration)
        link_now = None
        for i, cell in enumerate(cells, 1):
            self.progress.cell(i, cell)
            self._hook("start", cell)
            if self.lab is not None:
                if m.restore:
                    self.lab.restore()
                if self.plan.lab is not None:
                    link = self.plan.lab.link.merged(cell.configuration.link)
                    if link != link_now:
                        self.lab.set_link(link)
                        link_now = link
            hosts = self._hosts(cell)
            self._hook("ready", cell)
            warm = self._warmup(cell, hosts)
            for h in hosts:
                if h.agent is not None:
                    h.agent.check()
            started = now()
            before = self._window.sample()
            meas = measure(self._fio, cell, hosts, runtime=m.duration, folder=self.rundir.path / "raw",
                           tag="measure", extra=cell.configuration.fio, on_iops=self.progress.iops,
                           timeout=m.duration + FIO_MARGIN_S, label=f"cell {cell.id}", socket_dir=self._sockets)
            after = self._window.sample()
            self._hook("done", cell)
            rec = self._record(i, cell, hosts, meas, warm, Window.delta(before, after), started)
            self.rundir.add_record(rec)
            self.progress.done(rec)
            if rec.result.errors > len(meas.op_errors):  # a job ended with an error: the run cannot go on
                raise ToolError(f"cell {cell.id}: {'; '.join(rec.result.error_messages[:3])}")
            if meas.op_errors:  # kept and measured on; the report lists the window as having errors
                self.progress.note(f"cell {cell.id}: {len(meas.op_errors)} failed I/O operations (see report)")

    def _hook(self, stage: str, cell: Cell) -> None:
        if self.on_cell is not None:
            self.on_cell(stage, cell, self.lab)

    def _record(self, seq, cell, hosts, meas, warm, telemetry, started) -> CellRecord:
        result = parse_fio_json(meas.json_text)
        names = self._host_names(hosts, result.per_host_iops)
        per_host_iops = {names.get(k, k): v for k, v in result.per_host_iops.items()}
        per_host_cpu = {names.get(k, k): v for k, v in result.per_host_cpu_s.items()}
        ios = result.read.ios + result.write.ios
        extra = derive(ios, sum(per_host_cpu.values()), telemetry, self._storage_ports())
        series_by_host = {names.get(k, k): v for k, v in meas.series_by_host.items()}
        measured_verdict = (asdict(steady_state(meas.series, window=self.plan.method.steady_window))
                            if len(meas.series) >= self.plan.method.steady_window else None)
        extra |= {
            "iops_series": meas.series,
            "iops_series_by_host": series_by_host,
            "steady": {"steady": None if measured_verdict is None else measured_verdict["steady"],
                       "measured_window": measured_verdict, "warmup": warm},
            "telemetry": telemetry,
            "hosts": [h.name for h in hosts],
        }
        update = {"per_host_iops": per_host_iops, "per_host_cpu_s": per_host_cpu, "extra": extra}
        if meas.op_errors:  # fio printed failed operations but counted none: they are errors all the same
            n = len(meas.op_errors)
            update |= {"errors": result.errors + n, "error_messages": [
                *result.error_messages, f"fio reported {n} failed I/O operation{'s' if n != 1 else ''} "
                f"that its job error count missed, first: {meas.op_errors[0][:160]}"]}
        result = result.model_copy(update=update)
        lp = cell.load_point
        raw = self.rundir.path / "raw" / f"{cell.id}.measure.json"
        return CellRecord(
            run_id=self.rundir.run_id, seq=seq, cell_id=cell.id, workload=cell.workload.name,
            configuration=cell.configuration.name, baseline=cell.configuration.name == self.plan.baseline,
            load_index=cell.load_index, hosts=lp.hosts, streams_per_host=lp.streams, oio_per_stream=cell.oio,
            total_oio=cell.total_oio, repeat=cell.repeat, started=started, ended=now(), result=result,
            raw_output=str(raw.relative_to(self.rundir.path)),
            job_file=str((self.rundir.path / "raw" / f"{cell.id}.measure.{hosts[0].name}.fio")
                         .relative_to(self.rundir.path)),
        )

    @staticmethod
    def _host_names(hosts: list[HostRun], keys: dict[str, float]) -> dict[str, str]:
        """fio's 'HOST:PORT' keys → the plan's host names."""
        out = {}
        for key in keys:
            hostname, _, port = key.rpartition(":")
            for h in hosts:
                if h.agent is not None and h.agent.matches(hostname or key, int(port) if port.isdigit() else None):
                    out[key] = h.name
        # log file suffixes are the client's host names without port; a direct run's key is 'local'
        for h in hosts:
            if h.agent is not None:
                arg = h.agent.client_arg()
                out[arg.removeprefix("sock:").split(",")[0]] = h.name
            else:
                out["local"] = h.name
        return out
