"""`protolab history [PLAN|NAME]` and `protolab check RUN --against BASELINE|latest`. The catalogue, the analysis and
matplotlib are imported inside the commands, so that registering them costs `protolab --help` nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ProtolabError


def _plan_named(cat, plan: str) -> str:
    """The plan name ``plan`` stands for: a plan name in the catalogue, a run id of it, or a plan file's name."""
    names = [p for p, _, _ in cat.plans()]
    if plan in names:
        return plan
    run = next((r for r in cat.runs() if r.run_id == plan or r.run_id == Path(plan).name), None)
    if run is not None:
        return run.plan
    if plan.endswith(".toml") and Path(plan).is_file():
        from ..plan.load import load_plan_text, read_plan_file

        name = load_plan_text(read_plan_file(plan), source=plan).name
        if name in names:
            return name
        plan = f"{name} ({plan})"
    raise ProtolabError(f"history: no runs of plan {plan!r} in {cat.root}; "
                        + (f"plans there: {', '.join(names)}" if names else "it holds no run directory yet")
                        + " (give --results DIR where 'protolab run' wrote them)")


def history_command(
    plan: Optional[str] = typer.Argument(None, help="The study: its plan name, a plan file, or one of its runs "
                                         "(results/<run-id>). Without it: the studies in the results directory."),
    results: Path = typer.Option(Path("results"), "--results", help="The results directory (run directories and "
                                 "the catalogue, catalogue.sqlite)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where history.html (with figures/ and tables/) goes "
                                       "(default: RESULTS/history-<plan>)."),
    no_page: bool = typer.Option(False, "--no-page", help="Print the history only; write no page."),
    as_json: bool = typer.Option(False, "--json", help="Print the history as JSON."),
) -> None:
    """The runs of one study over time: each run's environment and, per configuration, its headline figures and
    their change from the run before (called only as `protolab compare` calls one, else its MDD); writes a page
    drawing each figure over the runs."""
    from ..report.terminal import make_console, plain_table, print_table
    from .index import open_catalogue

    console, errs = make_console(), make_console(stderr=True)
    cat = open_catalogue(results)
    name = _plan_named(cat, plan) if plan is not None else None  # a bad name: refused before anything is written
    for line in [cat.save(), *cat.ignored, *(f"{r.run_id}: not read: {r.error}" for r in cat.unreadable())]:
        if line:
            errs.print(f"{results}: {line}", highlight=False, markup=False, soft_wrap=True)
    if name is None:
        table = [[p, str(n), newest] for p, n, newest in cat.plans()]
        if as_json:
            import json

            print(json.dumps({"results": str(results), "plans": [{"plan": p, "runs": int(n), "newest": newest}
                                                                 for p, n, newest in table]}, indent=2))
            return
        print_table(console, plain_table(f"studies in {results}", ["plan", "runs", "newest run"], table))
        return
    from ..report.report_data import slug
    from .history import build_history, history_json

    h = build_history(cat, name)
    page = None
    if not no_page:
        from .page import write_history_page

        page = write_history_page(h, out if out is not None else Path(results) / f"history-{slug(h.plan)}")
    if as_json:
        import json

        print(json.dumps({**history_json(h), "page": str(page) if page else None}, indent=2))
        return
    from ..metrics import METRICS
    from ..report.htmlkit import fmt_number

    runs = [[r.run_id, r.started, r.status, str(r.cells), r.env.text(),
             ", ".join(h.env_changed.get(r.run_id, [])) or "–"] for r in h.runs]
    print_table(console, plain_table(f"{h.plan}: {len(h.runs)} run(s), oldest first", ["run", "started", "status",
                                     "cells", "environment", "changed from the run before"], runs))
    for ln in h.lines:
        rows = [[s.run_id, METRICS[m].title, f"{fmt_number(s.medians[m])} {METRICS[m].unit}",
                 s.changes[m].text() if m in s.changes else "–"]
                for s in ln.steps for m in h.metrics if m in s.medians]
        print_table(console, plain_table(f"{ln.workload} · {ln.name}", ["run", "metric", "median",
                                         "change from the run before"], rows))
    called = h.called()
    # soft_wrap: the page's path is printed whole, whatever the terminal's width, so it can be copied
    console.print(f"{len(called)} called change(s) between consecutive runs"
                  + (f"; page: {page}" if page else ""), highlight=False, markup=False, soft_wrap=True)


def _latest(run: Path, results: Path) -> Path:
    """The newest other complete run of ``run``'s plan in the catalogue of ``results``."""
    from ..results.rundir import RunDir
    from .fingerprint import fingerprint
    from .index import open_catalogue

    me = RunDir.open(run, write=False)
    plan = fingerprint(me.manifest()).plan
    cat = open_catalogue(results)
    others = [r for r in cat.runs(plan) if r.run_id != me.run_id and r.status == "complete"]
    if others:
        cat.save()
    else:
        raise ProtolabError(f"check {run} --against latest: no other complete run of plan {plan!r} in {results}; "
                            "give a baseline run directory, or --results DIR where its runs are")
    return Path(results) / others[-1].run_id


def check_command(
    run: Path = typer.Argument(..., help="The run to check, results/<run-id>."),
    against: str = typer.Option(..., "--against", help="The baseline: a run directory, or 'latest' (the newest "
                                "other complete run of the same plan in the results directory's catalogue)."),
    rules: Optional[Path] = typer.Option(None, "--rules", help="A TOML file of acceptance rules, rules = "
                                         "[\"iops >= -5 %\", \"lat_p99_us <= +10 %\"] (default: the built-in rules)."),
    results: Optional[Path] = typer.Option(None, "--results", help="The results directory 'latest' is looked up in "
                                           "(default: the one RUN is in)."),
    force: bool = typer.Option(False, "--force", help="Check even against an unlike run (another plan, fio version "
                               "or device model, other workloads or load points): the cells both measured."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome of every rule as JSON."),
) -> None:
    """Check a run against a baseline run by acceptance rules, for CI: exit 0 when every rule holds, 1 when a
    called change breaks one, 2 on bad input."""
    from .check import check_runs
    from .rules import default_rules, load_rules

    chosen = load_rules(rules) if rules is not None else default_rules()
    where = str(rules) if rules is not None else "built-in rules"
    base = _latest(run, results if results is not None else Path(run).absolute().parent) \
        if against == "latest" else Path(against)
    result = check_runs(run, base, chosen, where, force=force)
    if as_json:
        import json

        print(json.dumps(result.as_dict(), indent=2))
    else:
        from ..report.terminal import make_console

        console = make_console()
        for d in result.forced:
            console.print(f"checked anyway (--force): {d}", highlight=False, markup=False, soft_wrap=True)
        for d in result.environment:
            console.print(f"environment changed from the baseline: {d}", highlight=False, markup=False,
                          soft_wrap=True)
        for o in result.violated:
            console.print(o.line(), highlight=False, markup=False, soft_wrap=True)
        for r in result.unmeasured:
            console.print(f"not measured in both runs: {r}", highlight=False, markup=False, soft_wrap=True)
        console.print(result.summary(), highlight=False, markup=False, soft_wrap=True)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
