"""The procedure built from a plan's [method]: prepare, initialise, restore, warm up, measure a window.

Each step is one method; the session calls them in order and knows nothing of
fio. The warm-up and the measured window of a cell's repeat are one fio run (see
``engine.window``): the window measures the connections the warm-up warmed, and
its telemetry is sampled at the warm-up's end and the window's end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..analysis.steady import steady_state
from ..engine.faultlog import log_options
from ..engine.hangwatch import HUNG_MARGIN_S, HangWatch
from ..engine.histlog import hist_options, step_ms
from ..engine.jobfile import layout, render_fill, render_prepare
from ..engine.measure import HostRun, Measurement, measure
from ..engine.parse import parse_fio_json
from ..engine.readback import ReadBack, failed_lines, read_back
from ..engine.targets import Access, create_file
from ..engine.window import run_window
from ..errors import ToolError
from ..plan.expand import Cell
from ..plan.library import BUILTIN_WORKLOADS
from ..plan.model import Configuration, LoadPoint, Plan
from ..plan.stages import FillStep, Step, filled_bytes
from ..plan.verify import verification
from ..results.faultwindow import FaultWindow
from ..results.files import now
from ..results.records import OUT_OF_STEP_S, SeriesRow, ServiceTimes, Steadiness, Telemetry, Warmup
from ..results.rundir import RunDir
from ..safepath import inside
from ..telemetry.devicetime import DeviceCounters
from ..telemetry.telemetry_window import Window
from ..trust import make_dir
from .attaching import storage_of
from .fault_schedule import FaultSchedule, fault_window, gather, keep_heatmap
from .progress import Progress
from .sampled_capture import sampled_capture
from .testbed import Testbed

FIO_MARGIN_S = 60.0  # time fio may take beyond its runtime (connect, lay out, exit); then it is killed


@dataclass
class Window_:
    """A measured window: fio's measurement, the telemetry around it, when it started."""

    measurement: Measurement
    telemetry: Telemetry
    started: str
    t0_s: float = 0.0  # where the window's series starts on its time axis (an aging step's: after the previous)
    out_of_step_s: float = 0.0  # how far the fio servers' statuses fell out of step (a client run)
    checks: list[str] = field(default_factory=list)  # fio's lines for blocks that failed a verify check meanwhile
    fault: FaultWindow | None = None  # a plan with faults: the fault done, fio's errors, the 10 ms timeline
    service_times: ServiceTimes | None = None  # method.breakdown: the sampled capture's request→reply times
    device: DeviceCounters | None = None  # what the device model counted in the window (None: no device model)


def _steadiness(series: list[float], window: int) -> Steadiness | None:
    if len(series) < window:
        return None
    v = steady_state(series, window=window)
    return Steadiness(steady=v.steady, range_pct=v.range_pct, excursion_pct=v.excursion_pct,
                      window_start=v.window_start, window=v.window, reason=v.reason)


@dataclass
class WarmupRule:
    """When the warm-up ends, asked at each status with the IOPS per interval so far: at ``seconds``
    (fixed), or at the first second the SNIA rule holds over ``window`` seconds, at most ``seconds``."""

    seconds: float
    until_steady: bool
    window: int
    verdict: Steadiness | None = None
    ended_by: str | None = None
    interval: int = 1  # seconds between two statuses

    def __call__(self, series: list[float], elapsed_s: float) -> bool:
        if self.seconds <= 0:
            return True
        if not series:
            return False
        self.verdict = _steadiness(series, self.window)
        if self.until_steady and self.verdict is not None and self.verdict.steady:
            self.ended_by = "steady"
            return True
        if elapsed_s >= self.seconds - 0.5 * self.interval:  # the status snapshot nearest the warm-up's time
            self.ended_by = "maximum" if self.until_steady else "time"
            return True
        return False

    def record(self, seconds: float) -> Warmup:
        """What the warm-up did, for the record (``seconds``: the jobs' runtime when it ended)."""
        if self.seconds <= 0:
            return Warmup()
        return Warmup(mode="until-steady" if self.until_steady else "fixed", seconds=round(seconds, 3),
                      ended_by=self.ended_by or ("maximum" if self.until_steady else "time"), verdict=self.verdict)


class Procedure:
    """The steps of [method] on one testbed, writing into one run directory."""

    def __init__(self, plan: Plan, testbed: Testbed, rundir: RunDir, progress: Progress,
                 phase: Callable[[str], None]):
        self.plan, self.testbed, self.rundir, self.progress = plan, testbed, rundir, progress
        self.phase = phase  # tells the session (and the manifest) which step runs
        self.filled: dict[str, int] = {}  # bytes written so far by the fill stage, per distinct target
        init = plan.method.initialise
        # method.verify: every write checksummed, every window's regions read back after it (engine.readback)
        self.verification = verification(plan, BUILTIN_WORKLOADS.get(init.workload) if init is not None else None)
        self.aged: dict[str, float] = {}  # aging sequence → where its last step's series ended, s

    @property
    def fio(self):
        return self.testbed.fio

    def distinct_targets(self) -> dict[str, Configuration]:
        """One configuration per distinct target (several configurations may share one)."""
        out: dict[tuple, Configuration] = {}
        for c in self.plan.configurations:
            t = self.plan.target_of(c)
            if t.attach is not None:  # its device name says nothing (two LUNs may both be sdb in turn)
                out.setdefault(("attach", *storage_of(t.attach), getattr(t.attach.spec, "file", None)), c)
                continue
            a = self.testbed.data_access(c)
            out.setdefault((a.kind, a.filename, a.options.get("uri"), a.options.get("nfs_url"), a.netns), c)
        return {c.name: c for c in out.values()}

    def prepare(self) -> None:
        """Fill each distinct target once, so that reads touch real data."""
        self.phase("prepare")
        for name, c in self.distinct_targets().items():
            a = self.testbed.data_access(c)
            self.progress.note(f"preparing {a.describe()}")
            if a.kind == "file" and a.local_path is not None:
                create_file(a.local_path, a.size)
            job = self.rundir.job_path(f"prepare__{name}")
            job.write_text(render_prepare(a, self.verification))
            self._data_job(c, a, job, self.rundir.raw_path(f"prepare__{name}"), timeout=1800,
                           label=f"preparing target of {name!r}")

    def _data_host(self, c: Configuration, a: Access) -> HostRun:
        """Where protolab's own writes of ``c``'s data run: this machine, or — for a target on the load hosts (a
        path there, or a device attached there) — the first host's fio server, never this machine's disk."""
        if a.kind == "remote" and self.plan.hosts:
            return self.testbed.host(c, 0, 1, [])
        return HostRun("init", None, a.netns, [])

    def _data_job(self, c: Configuration, a: Access, job: Path, out: Path, *, timeout: float, label: str) -> str:
        """Run a prepare or fill job for ``c``'s data where ``_data_host`` says."""
        host = self._data_host(c, a)
        self.testbed.check_before_window(c)
        if host.agent is None:
            return self.fio.run_job(job, out, netns=a.netns, timeout=timeout, label=label)
        return self.fio.run_clients([(host.agent.client_arg(), job)], out, cwd=self.testbed.sockets,
                                    timeout=timeout, label=label)

    def initialise(self) -> dict[str, float]:
        """Run the initialisation access spec on every target once; returns IOPS per target."""
        init = self.plan.method.initialise
        assert init is not None
        self.phase("initialise")
        workload = BUILTIN_WORKLOADS[init.workload]
        done = {}
        for name, c in self.distinct_targets().items():
            self.progress.note(f"initialising the target of {name!r}: {init.workload} for {init.duration:g}s")
            cell = Cell(c, workload, LoadPoint(streams=init.streams), -1, 0)
            streams = [s for h in layout(cell, lambda h, g: self.testbed.data_access(c)) for s in h]
            host = self._data_host(c, streams[0].access)
            self.testbed.check_before_window(c)
            m = measure(self.fio, cell, [HostRun(host.name, host.agent, streams[0].access.netns, streams)],
                        runtime=init.duration, folder=self.rundir.path / "raw", tag="initialise",
                        timeout=init.duration + FIO_MARGIN_S, label=f"initialising {name!r}",
                        socket_dir=self.testbed.sockets, verify=self.verification)
            done[name] = round(parse_fio_json(m.json_text).iops, 1)
        return done

    def stage(self, step: Step) -> list[dict]:
        """Change the data for a stage step before its cells (fill: write up to the level); what it did."""
        if isinstance(step, FillStep):
            return self.fill(step.level)
        raise ValueError(f"no change of the data for stage {step.dimension!r}")  # only steps that change_data

    def fill(self, level: int) -> list[dict]:
        """Write every distinct target sequentially from where the last level ended up to ``level`` % of it.

        Nothing is written twice within a session: levels ascend and nothing restores between them. A new
        session (resume) starts from nothing, since the lab's pool does not outlive its teardown.
        """
        fill = self.plan.fill
        assert fill is not None
        self.phase(f"fill {level} %")
        done = []
        for name, c in self.distinct_targets().items():
            a = self.testbed.data_access(c)
            start, end = self.filled.get(name, 0), filled_bytes(a.size, level)
            if end <= start:
                continue
            self.progress.note(f"filling {a.describe()} to {level} % ({start:,} to {end:,} bytes)")
            if a.kind == "file" and a.local_path is not None:
                create_file(a.local_path, a.size)
            tag = f"fill{level}__{name}"
            job = self.rundir.job_path(tag)
            job.write_text(render_fill(a, start, end - start, fill.block_size, level, self.verification))
            started = now()
            text = self._data_job(c, a, job, self.rundir.raw_path(tag), timeout=max(1800.0, (end - start) / 1e6),
                                  label=f"filling the target of {name!r}")
            result = parse_fio_json(text)
            if result.errors:
                raise ToolError(f"filling the target of {name!r} to {level} %: "
                                f"{'; '.join(result.error_messages[:3]) or 'fio reported an error'}")
            self.filled[name] = end
            done.append({"level": level, "target": name, "offset": start, "bytes": end - start,
                         "written_bytes": result.write.bytes, "capacity": a.size, "mbps": round(result.mbps, 1),
                         "started": started, "ended": now()})
        return done

    def _region(self, cell: Cell, a: Access) -> Access:
        """The part of the target a cell measures on: at a fill level, the filled region only."""
        return replace(a, size=cell.region(a.size))

    def hosts(self, cell: Cell) -> list[HostRun]:
        """Where each host of the cell runs its streams."""
        c = cell.configuration
        per_host = layout(cell, lambda h, g: self._region(cell, self.testbed.access(c, h, g)))
        return [run for h, s in enumerate(per_host) for run in self.testbed.host_runs(c, h, len(per_host), s)]

    def window(self, cell: Cell, hosts: list[HostRun], window: Window, seq: int,
               session: int = 1) -> tuple[Window_, Warmup]:
        """The warm-up and the measured window in one fio run; telemetry covers the window only.

        The window's merged intervals go to series.csv as they come (a direct run: each the moment fio
        writes its status; a client run: all when the client prints), so an interrupted window keeps them.
        An aging step lasts ``age.every``, and only an aging sequence's first step warms up."""
        m = self.plan.method
        warmup = 0.0 if cell.workload.replay is not None else m.warmup  # a trace is measured whole, from its start
        if cell.continues:  # the data has been under load without a break since the sequence's first warm-up
            warmup = 0.0
        duration = cell.window_s if cell.window_s is not None else m.duration
        # a sequence step's series goes on where the previous step's ended: the steps' measured time, end to end
        offset = self.aged.get(cell.sequence, 0.0) if cell.continues else 0.0

        def row(iv) -> SeriesRow:
            r3 = lambda v: None if v is None else round(v, 3)  # noqa: E731
            return SeriesRow(seq=seq, cell_id=cell.id, phase="measure", host="all", t_s=offset + iv.t_s,
                             iops=round(iv.iops, 3), session=session, mbps=round(iv.mbps, 6),
                             lat_mean_us=r3(iv.lat_mean_us), lat_p95_us=r3(iv.lat_p95_us), lat_p99_us=r3(iv.lat_p99_us),
                             ios=iv.ios, seconds=iv.seconds)

        self.testbed.check_agents()
        self.testbed.check_before_window(cell.configuration)  # the last look before fio opens the devices
        self.phase("warm-up" if warmup > 0 else "measure")
        rule = WarmupRule(warmup, m.warmup_until_steady, m.steady_window, interval=m.interval)
        started: list[str] = [now()]
        faulted = cell.step("fault")  # a plan with faults (plan.faults): a 10 ms timeline, and the fault's schedule
        extra = dict(cell.configuration.fio)
        prefix, schedule = inside(self.rundir.path / "raw", f"{cell.id}.fault"), None
        if faulted is not None:
            extra |= log_options(str(prefix))
            if faulted.fault is not None:
                controls, protocol = self.testbed.fault_controls(cell.configuration)
                schedule = FaultSchedule(faulted.fault, protocol, controls)
        capture = sampled_capture(self.plan, cell, self.testbed, self.rundir.path, duration)  # method.breakdown
        hist_ms = step_ms(duration) if m.heatmap else None  # the window's latency heatmap (plan.heatmap_option)
        if hist_ms is not None:
            extra |= hist_options(str(prefix), hist_ms)
        # a faulted window's fio that does not end (libiscsi after tgt's restart) is stopped (engine.hangwatch)
        watch = HangWatch(duration, schedule.fault.duration + HUNG_MARGIN_S) if schedule is not None else None

        def warmed() -> None:
            started[0] = now()
            for timed in (schedule, capture):  # on the window's clock: the fault's steps, the capture
                if timed is not None:
                    timed.start()
            if watch is not None:
                watch.window_started()
            if warmup > 0:
                self.phase("measure")

        noted: list[bool] = []

        def write(rows: list[SeriesRow]) -> None:
            if rows and not noted:  # this seq now has rows: a resumed session must not reuse it
                self.rundir.events.window_started(seq, cell.id, session)
                noted.append(True)
            if watch is not None:
                watch.status()
            self.rundir.add_series(rows)

        window.start()  # the cell's link is set: its offload state is read anew
        try:
            run = run_window(self.fio, cell, hosts, warmup_max_s=warmup, duration_s=duration, warmup_done=rule,
                             sample=window.sample, tick=window.sample, interpolate=window.interpolate,
                             folder=self.rundir.path / "raw", tag="measure", label=f"cell {cell.id}",
                             timeout_margin_s=FIO_MARGIN_S, extra=extra, on_iops=self.progress.iops,
                             on_warmup_end=warmed, socket_dir=self.testbed.sockets, progress=window.progress,
                             interval_s=m.interval, on_interval=lambda iv: write([row(iv)]), verify=self.verification,
                             keep_failed=schedule is not None, on_poll=watch.check if watch is not None else None,
                             on_document=schedule.seen if schedule else None)
        finally:  # whatever ended the window (an error, a signal), the lab is restored: links up, servers running
            if capture is not None:
                capture.stop()
            if schedule is not None:
                schedule.stop()
        if hist_ms is not None:  # before the fault's gather, which removes fio's logs
            why = keep_heatmap(self.rundir.path, cell.id, prefix, warmup_s=run.warmup_s, window_s=run.window_s,
                               step=hist_ms, remove=faulted is None, ios=sum(iv.ios for iv in run.intervals))
            if why:
                self.progress.note(f"cell {cell.id}: no latency heatmap kept: {why}")
        fault = None
        if faulted is not None:
            store = inside(make_dir(self.rundir.path / "timeline"), f"{cell.id}.json")
            # fio that gave up ended the window early: the timeline runs to the window's planned end, without I/O
            fault = fault_window(faulted.value, faulted.fault, schedule, *gather(
                prefix, run.output, warmup_s=run.warmup_s, window_s=max(run.window_s, duration) if
                run.ended_by_error else run.window_s, store=store, ended=bool(run.ended_by_error)),
                str(store.relative_to(self.rundir.path)), ended_early=run.ended_by_error)
            if run.ended_by_error:
                self.progress.note(f"cell {cell.id}: fio gave up {run.window_s:.1f}s into the window: "
                                   f"{run.ended_by_error[-200:]}")
        if not run.streamed:
            write([row(iv) for iv in run.intervals])
        if cell.in_sequence:
            self.aged[cell.sequence] = offset + (run.intervals[-1].t_s if run.intervals else run.window_s)
        window_json = json.dumps(run.window_doc)  # once: the raw file and the record's parse read the same text
        inside(self.rundir.path / "raw", f"{cell.id}.window.json").write_text(window_json)
        if run.out_of_step_s > OUT_OF_STEP_S:
            self.progress.note(f"cell {cell.id}: the fio servers' statuses are {run.out_of_step_s:.1f}s out of "
                               "step (a busy machine delays fio's status timer); its window is uncertain")
        if run.window_s < duration - 0.5 * m.interval:  # fio ended first: its jobs started further apart than its spare
            self.progress.note(f"cell {cell.id}: the measured window lasted {run.window_s:.1f}s of "
                               f"{duration:g}s (fio's jobs ended first; see {run.output.name})")
        self.rundir.add_series([SeriesRow(seq=seq, cell_id=cell.id, phase="warmup", host="all",
                                          t_s=(i + 1.0) * m.interval, iops=v, session=session)
                                for i, v in enumerate(run.warmup_series)])
        telemetry = window_telemetry(window.delta(run.before, run.after), self.testbed.storage_ports(),
                                     served=self.testbed.serves(cell.configuration),
                                     foreign=self.testbed.foreign_fields(cell.configuration))
        meas = Measurement(window_json, run.series, run.series_by_host, run.op_errors)
        checks = list(run.verify_lines)
        if self.verification is not None and not run.live:  # a client run writes its servers' lines into its output
            checks += failed_lines(run.output.read_text())
        service = capture.result(run.intervals) if capture is not None else None
        return (Window_(meas, telemetry, started[0], offset, run.out_of_step_s, checks, fault=fault,
                        service_times=service, device=window.device(run.before, run.after)),
                rule.record(run.warmup_s))

    def read_back(self, cell: Cell, hosts: list[HostRun]) -> ReadBack | None:
        """method.verify: read every block of the cell's regions back and check it (None: nothing to verify, the
        plan asks for none or the cell's workload only reads; an aging sequence's step before its last, whose
        load the next step continues without a break)."""
        if self.verification is None or cell.workload.read_pct >= 100:
            return None
        age = cell.step("age")
        if age is not None and age.index < self.plan.age_steps - 1:
            return None
        self.phase("read back")
        self.testbed.check_before_window(cell.configuration)
        return read_back(self.fio, cell, hosts, self.verification, folder=self.rundir.path / "raw",
                         label=f"reading back cell {cell.id}", socket_dir=self.testbed.sockets)

    def steadiness(self, series: list[float]) -> Steadiness | None:
        """The measured window's own steady-state test (None when it is too short)."""
        return _steadiness(series, self.plan.method.steady_window)


def window_telemetry(delta: dict, storage_ports: list[str], *, served: bool | None,
                     foreign: tuple[str, ...] = ()) -> Telemetry:
    """A window's Telemetry record; a path no server serves (``served`` False: the lab's local path) has no server
    CPU and no wire: what crossed the storage ports meanwhile was other paths' (a VM study's idle kernel sessions
    keep their keep-alives going), so it is no figure of this cell (its counters stay in the record). ``foreign``
    fields are other paths' counters (the VM testbed's server guest idling through a userspace path's cell)."""
    delta = {k: v for k, v in delta.items() if k not in foreign}
    if served is False:
        return Telemetry(**_without_servers(delta), storage_ports=[])
    return Telemetry(**delta, storage_ports=storage_ports)


def _without_servers(delta: dict) -> dict:
    """A window's telemetry without the storage servers' CPU (a cell whose I/O none of them serves: the
    lab's local path measured tgtd's idle CPU as its 'server CPU', 0.0003 s, and a ratio of 9,400 × followed)."""
    out = {**delta, "servers_cpu_s": {}}
    out.pop("server_threads", None)
    for key in ("roles_cpu_s", "roles_cpu_wait_s"):
        if key in out:
            out[key] = {k: v for k, v in out[key].items() if k != "servers"}
    return out
