"""Running a study: check targets, bring up the lab if any, prepare data, measure every cell, store.

The order of work: nothing is created until every target has passed the
overwrite check; then the run directory; then the lab; then each target is
filled once; then the cells, configurations interleaved at each load point.
A failure or Ctrl-C stops the run, tears the lab down, and leaves every cell
measured so far on disk with the manifest saying how the run ended.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .engine.fio import Fio
from .engine.jobfile import render_job, render_prepare
from .engine.parse import parse_fio_json
from .engine.targets import Access, check_overwrite, create_file, resolve
from .errors import ProtolabError, ToolError
from .plan.expand import Cell, expand
from .plan.model import Plan
from .proc import Runner, SubprocessRunner
from .results.records import CellRecord
from .results.rundir import RunDir, now, provenance

FIO_MARGIN_S = 120.0  # time fio may take beyond warm-up + measured window (connect, lay out, exit)


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
    lab_factory: Callable[[Plan, set[str]], Any] | None = None
    sleep: Callable[[float], None] = time.sleep

    def run(self) -> RunDir:
        """Measure the whole matrix; returns the run directory (also when the run was stopped early)."""
        plan = self.plan
        fio = self.fio or Fio.locate(self.runner)
        accesses = self._local_accesses()  # checked before anything is created
        cells = expand(plan)
        rundir = RunDir.create(
            self.results_root,
            plan.name,
            {
                "status": "running",
                "plan_source": self.source,
                "plan": plan.model_dump(mode="json"),
                "plan_text": self.plan_text,
                "provenance": provenance(fio.version(), fio.engines(), fio.path),
                "started": now(),
                "ended": None,
                "cells_total": len(cells),
            },
        )
        lab = None
        try:
            if plan.uses_lab():
                lab = self._lab_up(rundir)
                accesses |= self._lab_accesses(lab)
            rundir.update_manifest(targets={n: a.describe() for n, a in accesses.items()})
            if plan.method.prepare:
                self._prepare(fio, rundir, accesses)
            self._measure(fio, rundir, cells, accesses, lab)
        except KeyboardInterrupt:
            rundir.update_manifest(status="interrupted", ended=now())
            raise
        except ProtolabError as e:
            rundir.update_manifest(status="failed", error=str(e), ended=now())
            raise ProtolabError(f"{e} (cells measured so far are in {rundir.path})") from None
        finally:
            if lab is not None:
                self.progress.note("tearing the lab down")
                lab.down()
        rundir.update_manifest(status="complete", ended=now())
        return rundir

    # -- targets ---------------------------------------------------------------------------------

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

    def _lab_up(self, rundir: RunDir):
        if self.lab_factory is None:
            from .lab_glue import make_lab  # the embedded lab, imported only when a plan uses it

            self.lab_factory = make_lab
        protocols = {self.plan.target_of(c).url.split(":", 1)[1] for c in self.plan.configurations
                     if self.plan.target_of(c).url.startswith("lab:")}
        self.progress.note(f"bringing the lab up ({', '.join(sorted(protocols))})")
        lab = self.lab_factory(self.plan, protocols)
        lab.up()
        rundir.update_manifest(lab=lab.describe())
        return lab

    def _lab_accesses(self, lab) -> dict[str, Access]:
        out = {}
        for c in self.plan.configurations:
            t = self.plan.target_of(c)
            if not t.url.startswith("lab:"):
                continue
            ep = lab.endpoint(t.url.split(":", 1)[1])
            out[c.name] = resolve(ep.url, size=min(ep.size_bytes, t.size or ep.size_bytes),
                                  ioengine=c.ioengine, direct=c.direct, netns=ep.netns, owned=True)
        return out

    # -- work ------------------------------------------------------------------------------------

    def _prepare(self, fio: Fio, rundir: RunDir, accesses: dict[str, Access]) -> None:
        """Fill each distinct target once, so that reads touch real data."""
        seen = set()
        for name, a in accesses.items():
            key = (a.kind, a.filename, a.options.get("uri"), a.options.get("nfs_url"), a.netns)
            if key in seen:
                continue
            seen.add(key)
            self.progress.note(f"preparing {a.describe()}")
            if a.kind == "file" and a.local_path is not None:
                create_file(a.local_path, a.size)
            job = rundir.job_path(f"prepare__{name}")
            job.write_text(render_prepare(a))
            fio.run_job(job, rundir.raw_path(f"prepare__{name}"), netns=a.netns,
                        timeout=600, label=f"preparing target of {name!r}")

    def _measure(self, fio: Fio, rundir: RunDir, cells: list[Cell], accesses: dict[str, Access], lab) -> None:
        m = self.plan.method
        self.progress.start(len(cells), m.warmup + m.duration)
        link_now = None
        for i, cell in enumerate(cells, 1):
            self.progress.cell(i, cell)
            access = accesses[cell.configuration.name]
            if lab is not None and self.plan.lab is not None:
                link = self.plan.lab.link.merged(cell.configuration.link)
                if link != link_now:
                    lab.set_link(link)
                    link_now = link
            job = rundir.job_path(cell.id)
            job.write_text(render_job(cell, access, m, cell.configuration.fio))
            raw = rundir.raw_path(cell.id)
            started = now()
            text = fio.run_job(job, raw, netns=access.netns, on_iops=self.progress.iops,
                               timeout=m.warmup + m.duration + FIO_MARGIN_S, label=f"cell {cell.id}")
            result = parse_fio_json(text)
            lp = cell.load_point
            rec = CellRecord(
                run_id=rundir.run_id, seq=i, cell_id=cell.id, workload=cell.workload.name,
                configuration=cell.configuration.name, baseline=cell.configuration.name == self.plan.baseline,
                load_index=cell.load_index, hosts=lp.hosts, streams_per_host=lp.streams,
                oio_per_stream=cell.oio, total_oio=cell.total_oio, repeat=cell.repeat, started=started,
                ended=now(), result=result, raw_output=str(raw.relative_to(rundir.path)),
                job_file=str(job.relative_to(rundir.path)),
            )
            rundir.add_record(rec)
            self.progress.done(rec)
            if result.errors:
                raise ToolError(f"cell {cell.id}: {'; '.join(result.error_messages[:3])}")
