"""The procedure built from a plan's [method]: prepare, initialise, restore, warm up, measure a window.

Each step is one method; the session calls them in order and knows nothing of
fio. A measured window's telemetry is sampled right before and right after the
fio run that measures it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..analysis.steady import steady_state
from ..engine.jobfile import layout, render_prepare
from ..engine.measure import HostRun, Measurement, measure
from ..engine.parse import parse_fio_json
from ..engine.targets import create_file
from ..plan.expand import Cell
from ..plan.library import BUILTIN_WORKLOADS
from ..plan.model import Configuration, LoadPoint, Plan
from ..results.files import now
from ..results.records import SeriesRow, Steadiness, Telemetry, Warmup
from ..results.rundir import RunDir
from ..telemetry.window import Window
from .progress import Progress
from .testbed import Testbed

FIO_MARGIN_S = 60.0  # time fio may take beyond its runtime (connect, lay out, exit); then it is killed


@dataclass
class Window_:
    """A measured window: fio's measurement, the telemetry around it, when it started."""

    measurement: Measurement
    telemetry: Telemetry
    started: str


def _steadiness(series: list[float], window: int) -> Steadiness | None:
    if len(series) < window:
        return None
    v = steady_state(series, window=window)
    return Steadiness(steady=v.steady, range_pct=v.range_pct, excursion_pct=v.excursion_pct,
                      window_start=v.window_start, window=v.window, reason=v.reason)


class Procedure:
    """The steps of [method] on one testbed, writing into one run directory."""

    def __init__(self, plan: Plan, testbed: Testbed, rundir: RunDir, progress: Progress,
                 phase: Callable[[str], None]):
        self.plan, self.testbed, self.rundir, self.progress = plan, testbed, rundir, progress
        self.phase = phase  # tells the session (and the manifest) which step runs

    @property
    def fio(self):
        return self.testbed.fio

    def distinct_targets(self) -> dict[str, Configuration]:
        """One configuration per distinct target (several configurations may share one)."""
        out: dict[tuple, Configuration] = {}
        for c in self.plan.configurations:
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
            job.write_text(render_prepare(a))
            self.fio.run_job(job, self.rundir.raw_path(f"prepare__{name}"), netns=a.netns, timeout=1800,
                             label=f"preparing target of {name!r}")

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
            m = measure(self.fio, cell, [HostRun("init", None, streams[0].access.netns, streams)],
                        runtime=init.duration, folder=self.rundir.path / "raw", tag="initialise",
                        timeout=init.duration + FIO_MARGIN_S, label=f"initialising {name!r}")
            done[name] = round(parse_fio_json(m.json_text).iops, 1)
        return done

    def hosts(self, cell: Cell) -> list[HostRun]:
        """Where each host of the cell runs its streams."""
        c = cell.configuration
        per_host = layout(cell, lambda h, g: self.testbed.access(c, h, g))
        return [run for h, s in enumerate(per_host) for run in self.testbed.host_runs(c, h, len(per_host), s)]

    def _run(self, cell: Cell, hosts: list[HostRun], runtime: float, tag: str, label: str) -> Measurement:
        return measure(self.fio, cell, hosts, runtime=runtime, folder=self.rundir.path / "raw", tag=tag,
                       extra=cell.configuration.fio, on_iops=self.progress.iops, timeout=runtime + FIO_MARGIN_S,
                       label=label, socket_dir=self.testbed.sockets)

    def warmup(self, cell: Cell, hosts: list[HostRun], seq: int) -> Warmup:
        """Warm up for a fixed time, or until IOPS is steady (SNIA PTS) or the maximum is reached."""
        m = self.plan.method
        if m.warmup <= 0:
            return Warmup()
        self.phase("warm-up")
        series: list[float] = []
        elapsed, k = 0.0, 0
        chunk = m.warmup if not m.warmup_until_steady else float(m.steady_window + 2)
        verdict = None
        while elapsed < m.warmup - 1e-9:
            run = max(1.0, min(chunk, m.warmup - elapsed))
            meas = self._run(cell, hosts, run, f"warmup{k}", f"cell {cell.id} (warm-up)")
            self.rundir.add_series([SeriesRow(seq=seq, cell_id=cell.id, phase="warmup", host="all",
                                              t_s=elapsed + i + 1.0, iops=v) for i, v in enumerate(meas.series)])
            series += meas.series
            elapsed += run
            k += 1
            verdict = _steadiness(series, m.steady_window)
            if m.warmup_until_steady and verdict is not None and verdict.steady:
                break
        if not m.warmup_until_steady:
            return Warmup(mode="fixed", seconds=elapsed, ended_by="time", verdict=verdict)
        ended = "steady" if verdict is not None and verdict.steady else "maximum"
        return Warmup(mode="until-steady", seconds=elapsed, ended_by=ended, verdict=verdict)

    def measure(self, cell: Cell, hosts: list[HostRun], window: Window) -> Window_:
        """The measured window, with telemetry sampled right around it."""
        self.phase("measure")
        self.testbed.check_agents()
        started = now()
        before = window.sample()
        meas = self._run(cell, hosts, self.plan.method.duration, "measure", f"cell {cell.id}")
        after = window.sample()
        delta = window.delta(before, after)
        telemetry = Telemetry(**delta, storage_ports=self.testbed.storage_ports())
        return Window_(meas, telemetry, started)

    def steadiness(self, series: list[float]) -> Steadiness | None:
        """The measured window's own steady-state test (None when it is too short)."""
        return _steadiness(series, self.plan.method.steady_window)
