"""The command line's commands (typer): parse, call the phases, show progress. Errors a user can cause: one line,
exit 2. `protolab --help` and `--version` are answered before this module loads (protolab.cli)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from typer.exceptions import Abort, TyperException

from . import __version__
from .errors import Interrupted, ProtolabError, one_line
from .usage import APP_HELP, SUMMARY

app = typer.Typer(
    help=APP_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Not a terminal (CI logs, pipes): $COLUMNS, or wide enough that tables keep their columns.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 132)
err = Console(stderr=True)


def _progress():
    from .progress_line import RichProgress  # rich.progress only for `run` and `resume`

    return RichProgress(out)


def _load(plan: Optional[Path], builtin: Optional[str], scale: Optional[str] = None,
          device_model: Optional[str] = None):
    from .plan.load import load_builtin, load_plan_text, read_plan_file

    if (plan is None) == (builtin is None):
        raise ProtolabError("give a plan file or --builtin NAME (one of them); see 'protolab plans'")
    if builtin:
        p, text = load_builtin(builtin, scale, device_model)
        return p, text, f"builtin:{builtin}"
    text = read_plan_file(plan)  # once: the text checked is the text stored with the run
    return load_plan_text(text, source=str(plan), scale=scale, device_model=device_model), text, str(plan)


BUILTIN_HELP = "{verb} a built-in study instead of a plan file (see 'protolab plans')."
SCALE_HELP = ("The plan's \\[scale.NAME] to run at (built-in studies: quick, for a small machine, or full, the "
              "seed's own).")


def _environment(p, lab_workdir: Optional[Path]):
    """What the pre-flight may know of this machine: fio's engines (if fio is here), the lab disk's space."""
    from .engine.fio import Fio
    from .errors import ToolError
    from .plan.preflight import Environment

    try:
        engines = Fio.locate().engines()
    except (ToolError, OSError):
        engines = None
    from .lab import default_workdir
    from .trust import check_workdir

    workdir = lab_workdir
    if workdir is None and p.uses_lab():
        workdir = default_workdir(p.lab.prefix)
    if workdir is not None and p.uses_lab():
        check_workdir(workdir)
    netem = None
    if p.uses_lab():
        from .lab.netns import kernel_netem

        netem = kernel_netem()
    return Environment.of_machine(engines, workdir, netem)


def _ended_complete(rundir) -> bool:
    """True when the run directory's manifest already says the run is complete."""
    try:
        return rundir.manifest().status == "complete"
    except (ProtolabError, OSError, ValueError):
        return False


def _interrupted(stop, rundir) -> Interrupted:
    """The one line a stopped run ends with; exit code 128 + the signal."""
    where = (f"the testbed was torn down; cells measured so far stay in {rundir.path} — "
             f"'protolab resume {rundir.path}' measures the rest") if rundir is not None else \
        "nothing was measured"
    if rundir is not None and _ended_complete(rundir):  # the signal came after the session's last word
        where = f"the run had completed: its report is in {rundir.path}"
    e = Interrupted(f"interrupted by {stop.name}; {where}")
    e.exit_code = stop.exit_code
    return e


def _measure(study, go) -> None:
    """Run ``go()`` (a study's run or resume) with the signals handled and the report written at its end."""
    from .run.signals import Stopper

    stop = Stopper()
    progress = study.progress

    def finish(rundir) -> None:
        from .report.report_cli import print_summary, write_report

        progress.stop()
        html = write_report(rundir)
        stop.check()  # a signal swallowed while the report was drawn (at-fork callbacks ignore exceptions)
        print_summary(rundir, out)  # medians with their intervals (% of the baseline), then the findings
        out.print(f"run directory: {rundir.path}  (manifest.json, records.jsonl, series.csv, cells.csv, raw/)")
        out.print(f"report: {html}  (and report.md, figures/, tables/)")
        stop.check()

    study.protect, study.finish = stop.protect, finish
    with stop.installed():
        try:
            go()
        except KeyboardInterrupt:
            raise _interrupted(stop, study.rundir) from None
        finally:
            progress.stop()


def _lab_allowed(p, source: str) -> None:
    from .doctor import lab_blocker

    if p.uses_lab():
        blocker = lab_blocker()
        if blocker:
            raise ProtolabError(f"{source}: {blocker}")


@app.command(short_help=SUMMARY["run"])
def run(
    plan: Optional[Path] = typer.Argument(None, help="The plan file (TOML)."),
    builtin: Optional[str] = typer.Option(None, "--builtin", "-b", help=BUILTIN_HELP.format(verb="Run")),
    results: Path = typer.Option(Path("results"), "--results", help="Where run directories are written."),
    lab_workdir: Optional[Path] = typer.Option(
        None, "--lab-workdir", help="Where the embedded lab keeps its record, pool and logs "
        "(default /var/lib/protolab/PREFIX; it must be root's alone)."),
    scale: Optional[str] = typer.Option(None, "--scale", help=SCALE_HELP),
    device_model: Optional[str] = typer.Option(
        None, "--device-model", help="Run the lab's pool over this device model (a preset: ram, flash, hdd-array) "
        "in place of the plan's \\[lab.storage], and without the plan's swept service times (one array); the run "
        "records it, resume keeps it, and 'protolab compare' of two runs shows how the figures and the seed's "
        "verdicts depend on it."),
):
    """Run a study: measure every cell, store it under results/<run-id>/, print the relative table and write the report.

    SIGINT, SIGTERM and SIGHUP stop it cleanly: fio and agents stopped, the lab torn down, the manifest
    'interrupted', exit 128 + signal; 'protolab resume RUN_DIR' measures the rest.
    """
    p, text, source = _load(plan, builtin, scale, device_model)
    _lab_allowed(p, source)
    from .run import Study  # numpy and scipy: after a bad plan is refused (1 s sooner)

    if p.scale:
        out.print(f"{source}: scale {p.scale}", highlight=False)
    study = Study(p, text, source, results_root=results, progress=_progress(), lab_workdir=lab_workdir)
    _measure(study, study.run)


@app.command(short_help=SUMMARY["resume"])
def resume(
    run_dir: Path = typer.Argument(..., help="The run directory to continue, results/<run-id>."),
    force: bool = typer.Option(False, "--force", help="Resume even if fio, the kernel, the machine or the "
                               "testbed differ from the run's first session."),
    lab_workdir: Optional[Path] = typer.Option(
        None, "--lab-workdir", help="Where the embedded lab keeps its record, pool and logs "
        "(default /var/lib/protolab/PREFIX; it must be root's alone)."),
):
    """Continue an interrupted or failed run: bring the testbed up again, prepare as the plan says, and measure
    exactly the (cell, repeat) pairs that are missing or failed, in the plan's interleaved order; then write the
    report."""
    from .results.rundir import RunDir
    from .run.resume import resumable

    rundir = RunDir.open(run_dir)
    p, text, source = resumable(rundir)
    import hashlib

    # the stored plan runs again as root: say which, before anything happens (it passes validate's checks below)
    out.print(f"resuming {rundir.path.name}: plan '{p.name}', sha256 {hashlib.sha256(text.encode()).hexdigest()[:12]}",
              highlight=False, markup=False)
    _lab_allowed(p, source)
    from .run import Study

    study = Study(p, text, source, results_root=rundir.path.parent,
                  progress=_progress(), lab_workdir=lab_workdir)
    _measure(study, lambda: study.resume(rundir, force=force))


@app.command(short_help=SUMMARY["detach"])
def detach(run_dir: Path = typer.Argument(..., help="The run directory, results/<run-id>.")):
    """Detach what a killed run left attached on its hosts (its list in root's /run/protolab/attached): the
    iSCSI sessions, NFS mounts and NVMe/TCP controllers it made, nothing else. `resume` does this first, then
    attaches afresh; use `detach` for a run you will not resume."""
    from .proc import SubprocessRunner
    from .results.rundir import RunDir
    from .run.attachments import detach_left
    from .run.resume import resumable

    rundir = RunDir.open(run_dir)
    if rundir.manifest().status == "complete":
        out.print(f"{rundir.path.name}: the run is complete; it detached everything at its end", highlight=False,
                  markup=False)
        return
    n = detach_left(resumable(rundir, verb="detach")[0], rundir, SubprocessRunner(), _progress())
    out.print(f"{rundir.path.name}: " + (f"detached {n} attach(es) an earlier session left" if n else
                                          "nothing is listed as attached"), highlight=False, markup=False)


@app.command(short_help=SUMMARY["validate"])
def validate(
    plan: Optional[Path] = typer.Argument(None, help="The plan file (TOML)."),
    builtin: Optional[str] = typer.Option(None, "--builtin", "-b", help=BUILTIN_HELP.format(verb="Check")),
    lab_workdir: Optional[Path] = typer.Option(
        None, "--lab-workdir", help="The lab directory `run` would use (its disk must hold the pool)."),
    scale: Optional[str] = typer.Option(None, "--scale", help=SCALE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (errors stay one line, exit 2)."),
):
    """Check a plan as `run` would before it creates anything, and show the matrix it expands to."""
    from .plan.expand import expand
    from .plan.matrix_line import matrix_line
    from .plan.preflight import preflight
    from .plan.warnings import machine_memory, plan_warnings

    p, _text, source = _load(plan, builtin, scale)
    preflight(p, source, _environment(p, lab_workdir))
    _overwrite_checks(p)
    cells = expand(p)
    cached = p.uses_lab() or any(not c.direct for c in p.configurations)
    warnings = plan_warnings(p, machine_memory() if cached else None)
    m = p.method
    if as_json:
        import json

        print(json.dumps({"plan": source, "name": p.name, "valid": True, "scale": p.scale,
                          "configurations": len(p.configurations), "workloads": len(p.workloads),
                          "load_points": len(p.load_points),
                          "fill_levels": p.fill.levels if p.fill is not None else None,
                          "repeats": m.repeats if isinstance(m.repeats, int) else m.repeats.model_dump(),
                          "cells": len(cells), "cells_max": len(cells) // m.min_repeats * m.max_repeats,
                          "measurement_s": len(cells) * p.seconds_per_cell,
                          "measurement_s_max": len(cells) // m.min_repeats * m.max_repeats * p.seconds_per_cell,
                          "warnings": warnings}, indent=2))
        return
    for w in warnings:
        err.print(f"warning: {source}: {w}", highlight=False, soft_wrap=True)
    out.print(f"{source}: plan {p.name!r} is valid — {matrix_line(p, len(cells))}", highlight=False, markup=False)


def _overwrite_checks(p) -> None:
    """run's data-safety check of every non-lab target, so validate refuses what run would."""
    from .proc import SubprocessRunner
    from .run.testbed import checked_targets

    checked_targets(p, SubprocessRunner())


@app.command(short_help=SUMMARY["plans"])
def plans():
    """List the built-in studies: name, description, the seed study they reproduce, runtime at each scale."""
    from .plan.library import builtin_studies, study_description
    from .plan.load import study_runtimes

    for name, text in builtin_studies().items():
        seed, times = study_runtimes(name)
        extra = "; ".join(x for x in (f"seed: {seed}" if seed else "", times) if x)
        out.print(f"{name:<16} {study_description(text)}" + (f" [{extra}]" if extra else ""), highlight=False,
                  markup=False)


@app.command(short_help=SUMMARY["workloads"])
def workloads():
    """List the built-in workloads (access specs), one line each."""
    from .plan.library import BUILTIN_WORKLOADS

    for name, w in BUILTIN_WORKLOADS.items():
        out.print(f"{name:<16} {w.summary():<42} {w.description}", highlight=False)


@app.command(short_help=SUMMARY["doctor"])
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
           hosts: Optional[Path] = typer.Option(None, "--hosts", help="Check instead each load host of this plan "
                                                "(ssh, fio, each attached target's tools, modules and route MTU).")):
    """Show what is installed (fio, its engines), whether this machine allows the embedded lab,
    and whether it can run virtual machines as load hosts (QEMU, guest image, KVM or TCG and why)."""
    from .doctor import fio_checks, lab_checks, vm_checks
    from .proc import SubprocessRunner

    runner = SubprocessRunner()
    bad = 0
    if hosts is not None:
        from .hostcheck import check_hosts

        sections = tuple((f"host {r.title}", r.checks, r.required) for r in check_hosts(_load(hosts, None)[0], runner))
    else:  # VMs are optional: what they lack is reported, but does not fail the doctor
        sections = (("fio", fio_checks(runner), True), ("embedded lab", lab_checks(runner), True),
                    ("virtual machines (optional)", vm_checks(runner), False))
    if as_json:
        import json

        doc = [{"section": t, "required": need, "checks": [{"item": c.item, "ok": c.ok, "detail": c.detail,
                                                             "fix": None if c.ok else c.fix} for c in checks]}
               for t, checks, need in sections]
        ok = all(c["ok"] for sec in doc if sec["required"] for c in sec["checks"])
        print(json.dumps({"ok": ok, "sections": doc}, indent=2))
        if not ok:
            raise typer.Exit(1)
        return
    for title, checks, needed in sections:
        out.print(f"[bold]{title}[/bold]")
        for c in checks:
            mark = "[green]ok[/green]     " if c.ok else "[red]missing[/red]"
            out.print(f"  {mark} {c.item:<20} {c.detail}", highlight=False)
            if not c.ok:
                bad += needed
                out.print(f"           [yellow]→ {c.fix}[/yellow]", highlight=False)
    if bad:
        raise typer.Exit(1)


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print protolab's version and exit.")):
    if version:
        out.print(f"protolab {__version__}")
        raise typer.Exit(0)


def _register_subcommands() -> None:
    """Commands whose bodies live in their own packages."""
    from .catalogue.catalogue_cli import check_command, history_command
    from .lab.lab_cli import lab_app
    from .limits_cli import limits_command
    from .report.report_cli import compare_command, report_command

    app.add_typer(lab_app, name="lab", help=SUMMARY["lab"], short_help=SUMMARY["lab"])
    for name, command in (("limits", limits_command), ("report", report_command), ("compare", compare_command),
                          ("history", history_command), ("check", check_command)):
        app.command(name, short_help=SUMMARY[name])(command)


_register_subcommands()


def main() -> None:
    """Run the app; ProtolabError → one line on stderr, exit 2; Ctrl-C → exit 130."""
    try:
        from .trust import apply_umask

        apply_umask()
        rv = app(standalone_mode=False)
    except Interrupted as e:
        sys.stderr.write(f"protolab: {e}\n")
        # The teardown and the manifest are done and every file is written atomically; leave at once, so
        # that nothing in the interpreter's shutdown can turn the exit code into another (a late
        # KeyboardInterrupt there made Python end itself with SIGINT, -2, once in CI).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(e.exit_code)
    except ProtolabError as e:
        sys.stderr.write(f"protolab: error: {one_line(str(e))}\n")
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, Abort):
        sys.stderr.write("protolab: interrupted; cells measured so far stay in the run directory\n")
        sys.exit(130)
    except OSError as e:  # the environment: disk full, permissions, a vanished file
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"protolab: error: {e.strerror or e}{where}; check the path, space and permissions\n")
        sys.exit(2)
    except TyperException as e:  # usage errors: typer prints them its own way, exit 2
        show = getattr(e, "show", None)
        if show:
            show()
        else:
            sys.stderr.write(f"protolab: error: {e}\n")
        sys.exit(e.exit_code)
    except Exception as e:  # a bug: keep the details, show one line
        import tempfile
        import traceback

        fd, path = tempfile.mkstemp(prefix="protolab-crash-", suffix=".txt")
        with open(fd, "w") as f:
            traceback.print_exc(file=f)
        sys.stderr.write(f"protolab: internal error: {type(e).__name__}: {e}; this is a bug — "
                         f"the traceback is in {path}\n")
        sys.exit(70)
    sys.exit(rv if isinstance(rv, int) else 0)
