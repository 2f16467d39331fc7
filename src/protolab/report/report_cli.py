"""`protolab report RUN`, `protolab compare RUN_A RUN_B`, and `write_report` (called at the end of `protolab run`)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from ..errors import ProtolabError

if TYPE_CHECKING:
    from ..results.rundir import RunDir

# The analysis (scipy) and report modules are imported inside the commands that use them, so that
# registering these commands costs `protolab --help` nothing.


#: The terminal's summary shows at most this many load points per workload (report.md has them all).
TERMINAL_LOADS = 8


@contextmanager
def _no_gc():
    """The cyclic garbage collector paused: building a report allocates millions of objects and no cycles worth
    collecting, and the collector's full scans were half of a 10,000-window report's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def write_report(rundir: RunDir, *, figures: bool = True) -> Path:
    """Write report.html, report.md, tables/*.csv and (unless `figures` is False) figures/*.png|svg; return the HTML.

    The HTML is written last, so a report.html on disk always has its figures and tables beside it.
    """
    with _no_gc():
        return _write_report(rundir, figures=figures)


def _write_report(rundir: RunDir, *, figures: bool) -> Path:
    from .drawer import Drawer

    drawer = Drawer()  # its workers import matplotlib while this process reads the run
    try:
        return _write_report_with(rundir, drawer, figures=figures)
    finally:
        drawer.close()


def _write_report_with(rundir: RunDir, drawer, *, figures: bool) -> Path:
    from ..results.heatmapfile import read_heatmaps
    from ..results.rundir import atomic_write
    from . import tables
    from .cellscsv import CellsCsv
    from .html import page
    from .sections import built, report_markdown

    records = rundir.records()
    if not records:
        raise ProtolabError(f"{rundir.path}: no measured cells in this run directory; nothing to report "
                            "(run the study again, or resume it)")
    # one drawing per chart: its SVG is inlined in the page and, with the PNG, written to figures/ (drawn by
    # worker processes: the relative charts while the rest is built, the others while the tables are written)
    folder = rundir.path / "figures" if figures else None
    waits, early = [], set()

    def draw_early(charts, configurations) -> None:
        early.update(c.id for c in charts)
        waits.append(drawer.start(charts, folder, configurations))

    manifest = rundir.manifest()
    # written by a forked process meanwhile, which holds none of the drawing workers' pipes
    cells = CellsCsv(rundir, records, tables.plan_of(manifest), [conn for _, conn in drawer.workers])
    try:
        data = tables.build(manifest, records, series=rundir.series,  # reads only the series it draws
                            intervals=rundir.intervals, drawing=draw_early,
                            heatmaps=lambda ids: read_heatmaps(rundir.path, ids))
        waits.append(drawer.start([c for c in data.charts if c.id not in early], folder, data.configurations))
        tables.write_csvs(data, rundir.path / "tables")
        sections = built(data)  # each section's model, for both pages
        atomic_write(rundir.path / "report.md", report_markdown(data, sections))
        fill = page(data, sections)  # the page, with a mark where each chart goes: rendered while the charts are drawn
        drawn = {k: v for wait in waits for k, v in wait().items()}
        cells.finish()
    finally:
        cells.stop()
    path = rundir.path / "report.html"
    atomic_write(path, fill(drawn))
    rundir.report_data = data  # built once: the summary and --json reuse it
    return path


def report_json(rundir: RunDir, path: Path) -> dict:
    """The report as data: where it is, the findings, every row's medians and % of the baseline, and the verdict of
    each seed claim."""
    from ..plan.sweep import chosen as sweep_chosen
    from .breakdowndata import breakdown_json
    from .capacitydata import capacity_json
    from .faultdata import fault_json

    data = getattr(rundir, "report_data", None)
    if data is None:
        from . import tables

        data = tables.build(rundir.manifest(), rundir.records(), series=rundir.series(), intervals=rundir.intervals)
    return {
        "run": str(rundir.path), "report": str(path), "baseline": data.baseline,
        "findings": [{"kind": f.kind, "text": f.text, "metric": f.metric, "workload": f.workload,
                      "configurations": list(f.configurations),
                      # beside a "no clear difference": the smallest difference it could have detected (80 % power)
                      "detectable": [{"metric": k, "low_pct": lo, "high_pct": hi, "alpha_low": a_lo, "alpha_high": a_hi}
                                     for k, lo, hi, a_lo, a_hi in f.detectable]} for f in data.findings],
        "rows": [{"workload": r.workload, "point": dict(r.point.coords), "load": r.load_label,
                  "configuration": r.configuration, "repeats": r.repeats, "medians": r.values,
                  "percent_of_baseline": r.relative} for r in data.rows],
        "summary": summary_json(data),
        # a swept plan: the point its claims were judged at (the plan's own service time, link rate), None without
        "claims_judged_at": sweep_chosen(data.plan) or None,
        # a rate ladder (plan.rate_ladder): each configuration's knee and capacity under the objective, None without
        "capacity": capacity_json(data.capacity, data.alpha),
        # a plan with faults (plan.faults): each configuration's stall, errors, degraded IOPS, recovery; None without
        "faults": fault_json(data.faults),
        # where each cell's mean latency went (analysis.time_breakdown): its parts, intervals and the check; [] without
        "breakdown": breakdown_json(data.breakdown),
        # method.verify, per configuration: MiB read back and checked, failed chunks, the lowest bad offset; [] without
        "verified": [{"configuration": c.configuration, "algorithm": c.algorithm, "windows": c.windows,
                      "verified_mib": round(c.verified_mib, 3), "mismatches": c.mismatches,
                      "during_window": c.during_window, "first_bad_offset": c.first_bad_offset,
                      "first_bad_cell": c.first_bad_cell or None, "errors": c.errors} for c in data.verified],
        "claims": [{"finding": v.finding + 1, "section": v.section, "said": v.said, "claim": v.claim,
                    "band_source": v.band_source, "untestable": v.untestable or None, "verdict": v.verdict,
                    "figures": v.figures, "reason": v.reason,
                    # the smallest difference the claim's tests could have called (80 % power), over its parts
                    "mdd_pct": list(v.mdd_range) if v.mdd_range else None,
                    "repeats_to_decide": v.repeats, "decide": v.decide or None,
                    "parts": [{"workload": p.workload, "point": p.point, "subject": p.subject, "reference": p.reference,
                               "metric": p.metric, "change_pct": p.change, "low_pct": p.low, "high_pct": p.high,
                               "verdict": p.outcome, "why": p.why, "decisive": p in v.parts, "mdd_pct": p.mdd,
                               "repeats_to_decide": p.repeats}
                              for p in (*v.parts, *v.others)]}
                   for v in data.claims],
    }


def summary_json(data) -> dict:
    """The summary as data: per workload its matrix (every cell's state, figures and load points), and the
    headlines with what each stands on."""
    import dataclasses

    def row(r) -> dict:
        return {"configuration": r.configuration, "baseline": r.baseline, "held back by": r.bottleneck,
                "cells": {k: dataclasses.asdict(c) for k, c in r.cells.items()}}

    return {"matrix": [{"workload": m.workload, "baseline": m.baseline, "metrics": m.metrics, "loads": m.loads,
                        "rows": [row(r) for r in m.rows]} for m in data.matrices],
            "headlines": [dataclasses.asdict(h) for h in data.headlines]}


def print_summary(rundir: RunDir, console: Console | None = None) -> None:
    """The report.md tables on the terminal, with the findings."""
    from . import tables
    from .markdown import summary_table
    from .terminal import make_console, plain_table, print_table
    console = console or make_console()
    data = getattr(rundir, "report_data", None) or tables.build(rundir.manifest(), rundir.records(),
                                                                series=rundir.series(), intervals=rundir.intervals)
    for w in data.workloads:
        title, headers, rows = summary_table(data, w, most_loads=TERMINAL_LOADS)
        print_table(console, plain_table(title, headers, rows))
    lines = [f"• {f.text}" for f in data.findings if f.kind != "outlier"]
    console.file.write("\n".join(lines) + ("\n" if lines else ""))
    console.file.flush()


def report_command(
    run: Path = typer.Argument(..., help="A run directory, results/<run-id>."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Do not write figures/*.png|svg (the page still "
                                "draws every chart)."),
    as_json: bool = typer.Option(False, "--json", help="After writing the report, print its findings and rows "
                                 "as JSON instead of the tables."),
) -> None:
    """Regenerate a run's report (report.html, report.md, figures/, tables/) from its run directory."""
    from ..results.rundir import RunDir
    from .terminal import make_console
    console = make_console()
    gc.disable()  # a short-lived command that allocates much and frees little (see _no_gc)
    rundir = RunDir.open(run)
    path = write_report(rundir, figures=not no_figures)
    if as_json:
        import json

        print(json.dumps(report_json(rundir, path), indent=2, default=str))
        return
    print_summary(rundir, console)
    console.print(f"report: {path}  (report.md, figures/, tables/ beside it)", highlight=False, markup=False)


def compare_command(
    run_a: Path = typer.Argument(..., help="Run A, the reference (= 100)."),
    run_b: Path = typer.Argument(..., help="Run B, shown relative to A."),
    force: bool = typer.Option(False, "--force", help="Compare the cells both runs share even if workloads or "
                               "load points differ."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where compare.md and compare.csv go "
                                       "(default: compare-<A>-vs-<B> beside run B)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison rows as JSON."),
) -> None:
    """The same study on two environments: A = 100, B relative, with 95 % CIs and corrected significance."""
    from .markdown import compare_rows, verdict_tally
    from .terminal import make_console, plain_table, print_table
    console = make_console()
    path, rows, text, pairs = run_compare(run_a, run_b, force=force, out=out)
    if as_json:
        import dataclasses
        import json

        from .compareclaims import claims_csv

        print(json.dumps({"a": str(run_a), "b": str(run_b), "written": str(path),
                          "rows": [dataclasses.asdict(r) for r in rows], "claims": claims_csv(pairs)},
                         indent=2, default=str))
        return
    headers, table = compare_rows(rows)
    console.print(f"A = {run_a}\nB = {run_b}\nWhat differs:", highlight=False, markup=False)
    for line in text.split("## What differs", 1)[-1].split("\n## ", 1)[0].splitlines():
        if line.startswith("- ") or line.startswith("Compared anyway"):
            console.print(line, highlight=False, markup=False)
    print_table(console, plain_table(f"B relative to A (A = 100): {Path(run_a).name} → {Path(run_b).name}", headers,
                                     table))
    if pairs:
        from .compareclaims import tally

        console.print(tally(pairs), highlight=False, markup=False)
    console.print(f"{verdict_tally(rows)} Written: {path}, compare.html and compare.csv beside it",
                  highlight=False, markup=False)


def run_compare(run_a: Path, run_b: Path, *, force: bool = False,
                out: Path | None = None) -> tuple[Path, list, str, list]:
    """Compare two run directories and write compare.md, compare.csv, compare.html (with figures/ and tables/) and,
    when their plans state seed claims, claims.csv; returns (md path, rows, md text, claim pairs)."""
    from ..analysis.compare import check_comparable, compare_runs, differences, unmatched
    from ..results.rundir import RunDir, atomic_write
    from . import tables
    from .markdown import compare_markdown
    a, b = RunDir.open(run_a, write=False), RunDir.open(run_b, write=False)
    ma, mb = a.manifest(), b.manifest()
    ra, rb = a.records(), b.records()
    for rd, recs in ((a, ra), (b, rb)):
        if not recs:
            raise ProtolabError(f"compare: {rd.path} has no measured cells; give a run that measured something")
    diffs = differences(ma, ra, mb, rb)
    check_comparable(diffs, force, str(a.path), str(b.path))
    rows = compare_runs(ra, rb)
    if not rows:
        raise ProtolabError(f"compare {a.path} {b.path}: the runs share no cell (workload, load point and "
                            "configuration); nothing to compare")
    only_a, only_b = unmatched(ra, rb)
    from .compareclaims import claim_pairs, claims_csv, claims_html, claims_markdown, verdicts_of

    pairs = claim_pairs(verdicts_of(a, ma, ra), verdicts_of(b, mb, rb))
    text = compare_markdown(a.run_id, b.run_id, diffs, rows, force, only_a, only_b, claims_markdown(pairs))
    from ..trust import make_dir

    # made and checked before the first write: a link or another user's directory planted at --out in a shared
    # /tmp, even between a check and the mkdir, is refused (tables/ and figures/ are made the same way)
    folder = make_dir(out if out is not None else b.path.parent / f"compare-{a.run_id}-vs-{b.run_id}")
    path = Path(folder) / "compare.md"
    atomic_write(path, text)
    from .comparepage import chart_tables, compare_page, render_compare
    from .drawer import draw_all

    page = compare_page(a.run_id, b.run_id, diffs, rows, force, only_a, only_b, claims=claims_html(pairs))
    drawn = draw_all(page.charts, Path(folder) / "figures", list(dict.fromkeys(r.configuration for r in rows)))
    for chart_id, table in chart_tables(page):
        atomic_write(Path(folder) / "tables" / f"{chart_id}.csv", tables.to_csv(table))
    atomic_write(Path(folder) / "compare.csv", tables.to_csv([
        {"workload": r.workload, "load point": r.load_label, "configuration": r.configuration, "metric": r.metric,
         "n A": r.n_a, "n B": r.n_b, "median A": r.median_a, "median B": r.median_b, "B % of A": r.relative,
         "CI low %": r.ci_low, "CI high %": r.ci_high, "p": r.p_value, "p (corrected)": r.p_adjusted,
         "verdict": r.verdict} for r in rows]))
    if pairs:
        atomic_write(Path(folder) / "claims.csv", tables.to_csv(claims_csv(pairs)))
    atomic_write(Path(folder) / "compare.html", render_compare(page, drawn))
    return path, rows, text, pairs
