"""A session: the ordered, interleaved cell loop over one testbed, with hooks, resume and signals.

`Study.run()` starts a run directory and measures every cell; `Study.resume(path)`
measures exactly the (cell, repeat) pairs a run directory lacks or holds as failed,
in the plan's interleaved order. Either way, the order of work is: pre-flight and
overwrite checks (nothing created before them), the testbed up, prepare /
initialise / snapshot as the plan says, the cells, then — whatever happened —
the testbed down (a signal cannot abandon it), and last the manifest saying how
the session ended. Each session is listed in the manifest.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..analysis.derived import figures
from ..engine.fio import Fio
from ..errors import ProtolabError, ToolError
from ..plan.expand import Cell, expand
from ..plan.migrate import PLAN_FORMAT
from ..plan.model import Plan
from ..plan.preflight import Environment, preflight
from ..plan.sweep import sweep_values
from ..proc import Runner, SubprocessRunner
from ..results.manifest import How, Provenance, RunStart
from ..results.rundir import RunDir
from .caches import drop_caches
from .procedure import Procedure
from .progress import Progress, Silent
from .recording import make_record, verified
from .schedule import Planned, pending, schedule
from .sessionmark import SessionMark
from .testbed import Testbed

Hook = Callable[[str, Cell, Testbed], None]  # (stage: start | ready | done, cell, testbed)


def make_testbed(plan: Plan, fio: Fio, runner: Runner, progress: Progress, lab_workdir: Path | None) -> Testbed:
    """The testbed a plan asks for."""
    if plan.hypervisor is not None:
        from ..lab import default_workdir
        from .vmbed import VmTestbed

        return VmTestbed(plan, fio, runner, progress, lab_workdir or default_workdir(plan.lab.prefix))
    if plan.uses_lab():
        from ..lab import default_workdir
        from .labbed import LabTestbed

        return LabTestbed(plan, fio, runner, progress, lab_workdir or default_workdir(plan.lab.prefix))
    return Testbed(plan, fio, runner, progress)


def _netem(plan: Plan) -> bool | None:
    """Whether the kernel offers netem, for a plan that builds the lab (None: not asked)."""
    if not plan.uses_lab():
        return None
    from ..lab.netns import kernel_netem

    return kernel_netem()


@dataclass
class Study:
    """One run of a plan (or the resumption of one)."""

    plan: Plan
    plan_text: str
    source: str
    results_root: Path = Path("results")
    fio: Fio | None = None
    runner: Runner = field(default_factory=SubprocessRunner)
    progress: Progress = field(default_factory=Silent)
    on_cell: Hook | None = None
    lab_workdir: Path | None = None
    protect: Callable[[], Any] = contextlib.nullcontext  # a context in which signals wait (teardown)
    finish: Callable[[RunDir], None] | None = None  # e.g. write the report; runs before the status is final
    rundir: RunDir | None = None
    testbed: Testbed | None = None  # made from the plan unless given (tests give a fake)

    # -- entry points ------------------------------------------------------------------------------

    def run(self) -> RunDir:
        """Measure the whole matrix into a new run directory; returns it."""
        plan = self.plan
        fio, testbed = self._prepare_checks()
        cells = expand(plan)  # with adaptive repeats: the first `min` of each cell (the schedule adds more)
        self.rundir = rundir = RunDir.create(self.results_root, plan.name, RunStart(
            plan_source=self.source, plan=plan.model_dump(mode="json"), plan_text=self.plan_text,
            plan_format=PLAN_FORMAT, provenance=Provenance.of_machine(fio.version(), fio.engines(), fio.path),
            testbed=testbed.describe(), cells_total=len(cells),
            dimensions=[d for s in plan.stages for d in s.dimensions],
        ))
        with rundir.held():
            return self._session(rundir, testbed)

    def resume(self, rundir: RunDir, force: bool = False) -> RunDir:
        """Measure the pairs ``rundir`` lacks or holds as failed, in the plan's order (see run.resume)."""
        from .resume import check_same

        with rundir.held():  # before anything is read or written: a session of the run still going refuses this one
            fio, testbed = self._prepare_checks()
            check_same(rundir, self.plan, fio.version(), testbed.describe(), force)
            self.rundir = rundir
            return self._session(rundir, testbed)

    def _prepare_checks(self) -> tuple[Fio, Testbed]:
        """Pre-flight and overwrite checks: everything that can refuse, before anything is created."""
        fio = self.fio = self.fio or Fio.locate(self.runner)
        testbed = self.testbed or make_testbed(self.plan, fio, self.runner, self.progress, self.lab_workdir)
        workdir = getattr(testbed, "workdir", None)
        preflight(self.plan, self.source, Environment.of_machine(fio.engines(), workdir, _netem(self.plan)))
        testbed.check()
        self.testbed = testbed
        return fio, testbed

    # -- the session -------------------------------------------------------------------------------

    def _session(self, rundir: RunDir, testbed: Testbed) -> RunDir:
        """Measure what the schedule says is left (everything for a new run, the rest for a resumed one)."""
        stops: dict[str, str] = {}
        todo = schedule(self.plan, rundir.records, stops)
        first = next(todo, None)
        cells = pending(self.plan, rundir.records())  # the planned count; adaptive adds repeats
        fio = testbed.fio
        events = rundir.events
        mark = SessionMark(rundir.path)  # a killed session's leftovers go before anything of this one is made
        killed, _ = mark.clean_dead(testbed.runner, self.progress.note, keep_logs_in=rundir.path / "lab-logs")
        if killed is not None:
            stored = rundir.all_records()
            events.session_killed(killed.session, len(stored), max((r.seq for r in stored), default=0))
        number = events.session_started(len(cells), Provenance.of_machine(fio.version(), fio.engines(), fio.path))
        phase = events.phase
        how: How = "complete"
        error: str | None = None
        measured = 0
        if first is None:  # e.g. a run stopped while its report was written: only the report is left to do
            self._note_stops(rundir, stops)
            return self._finished(rundir, number, measured)
        mark.begin(number)
        testbed.mark = mark  # the testbed notes what it makes there before making it
        try:
            phase("testbed up")
            testbed.on_agents = events.agents
            events.testbed_up(testbed.up(rundir.path))
            proc = Procedure(self.plan, testbed, rundir, self.progress, phase)
            attachments = getattr(testbed, "attachments", None)
            if attachments is not None:  # each attach on a host, as its kernel reported it
                attachments.on_attached = events.attached
            events.targets({c.name: testbed.target_label(c) for c in self.plan.configurations})
            method = self.plan.method
            if method.prepare:
                proc.prepare()
            if method.initialise is not None:
                events.initialised(method.initialise.workload, method.initialise.duration, proc.initialise(), number)
            if method.restore or method.initialise is not None:
                testbed.snapshot()  # every cell restores to this state (only the lab can)
                events.snapshot_taken()
                events.testbed_up(testbed.describe())  # its device model's overhead was measured again
            work = itertools.chain([first], todo)
            for measured, _ in enumerate(self._cells(rundir, testbed, proc, work, len(cells), number, stops), 1):
                pass
            self._note_stops(rundir, stops)
        except KeyboardInterrupt:
            how = "interrupted"
            raise
        except ProtolabError as e:
            why = [p for p in self._problems(testbed) if p not in str(e)]
            if why:
                e = ProtolabError(f"{'; '.join(why)}: {e}")
            how, error = "failed", str(e)
            raise ProtolabError(f"{e} ({rundir.path}: {len(rundir.records())} cells measured so far are kept; "
                                f"'protolab resume {rundir.path}' measures the rest)") from None
        except BaseException as e:  # a bug or a stuck process: still torn down, and the manifest still ended
            how, error = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            with self.protect():
                try:
                    phase("teardown")
                except ProtolabError:
                    pass
                left: BaseException | None = None
                try:
                    testbed.down(keep_logs_in=rundir.path / "lab-logs")
                except BaseException as e:  # every teardown step ran (Testbed.down); the manifest's end is next
                    left = e
                    if how == "complete":
                        how, error = "failed", f"teardown: {e}"
                if left is None:
                    mark.end()  # everything the session made is gone: nothing for a later session to clean
                if how != "complete":
                    self._end(rundir, number, how, error, measured)
                if left is not None and how == "failed" and error and error.startswith("teardown: "):
                    raise left
        return self._finished(rundir, number, measured)

    def _finished(self, rundir: RunDir, number: int, measured: int) -> RunDir:
        """Every cell measured: the caller's last step (the report), then the session is complete."""
        ended = None
        if self.finish is not None:
            ended = rundir.events.measured_all()  # the run's end, before the report that shows it
            try:
                self.finish(rundir)
            except KeyboardInterrupt:
                self._end(rundir, number, "interrupted", None, measured)
                raise
            except ProtolabError as e:
                self._end(rundir, number, "failed", str(e), measured)
                raise
        self._end(rundir, number, "complete", None, measured, ended)
        return rundir

    def _end(self, rundir: RunDir, number: int, how: How, error: str | None, measured: int | None,
             at: str | None = None) -> None:
        """Write how the session ended (when the disk lets us)."""
        try:
            rundir.events.session_ended(number, how, error, measured, at)
        except ProtolabError:
            pass  # the disk refused; the error that brought us here names the path

    def _note_stops(self, rundir: RunDir, stops: dict[str, str]) -> None:
        """Adaptive repeats: why each cell's repeating ended, in the manifest (kept across sessions)."""
        if stops:
            rundir.events.repeats_stopped(stops)

    def _cells(self, rundir: RunDir, testbed: Testbed, proc: Procedure, work: Iterator[Planned], planned: int,
               session: int, stops: dict[str, str]):
        """Measure the scheduled pairs in order; yields after each stored record."""
        m = self.plan.method
        self.progress.start(planned, self.plan.seconds_per_cell)
        window = testbed.window()
        # a window that was interrupted has no record but keeps its series under its seq: never reuse it
        # (Procedure.window notes the seq in the manifest when it writes a window's first row)
        man = rundir.manifest()
        seq = man.next_seq - 1
        if man.unfinished_window is not None:  # listed for the report before it is replaced
            rundir.events.window_interrupted(man.unfinished_window)
        noted = 0
        at: dict[str, object] = {}  # the step each stage's data is at in this session (a new one starts afresh)
        for i, item in enumerate(work, 1):
            cell = item.cell
            for step in cell.steps:  # change the data before a step's first cell (a fill level is written)
                if step.changes_data and at.get(step.dimension) != step:
                    did = proc.stage(step)
                    if did:
                        rundir.events.stage_done(did, session)
                    at[step.dimension] = step
            if len(stops) != noted:  # a load point's repeating ended: say why while the run goes
                self._note_stops(rundir, stops)
                noted = len(stops)
            seq += 1
            self.progress.cell(i, cell)
            self._hook("start", cell)
            if m.restore and not cell.continues:  # an aging sequence's later steps go on with the aged data
                testbed.restore()
            testbed.set_sweep(sweep_values(cell.coords()))  # before the link: a swept rate replaces the cell's own
            testbed.set_link(cell.configuration)
            testbed.set_cpu(cell.configuration)
            hosts = proc.hosts(cell)
            dropped = drop_caches(self.plan, cell, testbed.runner)  # method.drop_caches: the cell starts cold
            self._hook("ready", cell)
            win, warm = proc.window(cell, hosts, window, seq, session)
            self._hook("done", cell)
            rec, rows = make_record(rundir, seq=seq, session=session, cell=cell, baseline=self.plan.baseline,
                                    hosts=hosts, window=win, warmup=warm,
                                    steadiness=proc.steadiness(win.measurement.series), interval_s=m.interval)
            # method.verify: every block of the cell's regions read back after a window that did not fail (a read-back
            # that fails stops the run before the record is stored: resume measures the cell again)
            back = proc.read_back(cell, hosts) if not rec.failed else None
            checked = verified(m.verify, proc.verification.interval, win.checks, back) if back is not None else None
            rec = rec.model_copy(update={"repeat_reason": item.reason, "caches_dropped": dropped,
                                         "verification": checked})
            rundir.add_series(rows)
            rundir.add_record(rec, figures(rec).csv_fields())
            self.progress.done(rec)
            yield rec
            if rec.failed:
                why = self._problems(testbed)  # say which part died, when one did, before fio's own words
                raise ToolError(f"cell {cell.id}: {'; '.join([*why, *rec.result.error_messages[:3]])}")
            if checked is not None and checked.mismatches:  # counted and measured on: the report says where
                self.progress.note(f"cell {cell.id}: {checked.mismatches} block(s) failed verification, the first "
                                   f"at offset {checked.first_bad_offset}")
            if win.measurement.op_errors:  # kept and measured on; the report lists the window as having errors
                self.progress.note(f"cell {cell.id}: {len(win.measurement.op_errors)} failed I/O operations "
                                   "(see report)")

    @staticmethod
    def _problems(testbed: Testbed) -> list[str]:
        try:
            return testbed.problems()
        except Exception:  # noqa: BLE001 — a diagnosis must never hide the error it explains
            return []

    def _hook(self, stage: str, cell: Cell) -> None:
        if self.on_cell is not None:
            self.on_cell(stage, cell, self.testbed)
