"""The summary tables (report.md, via report.sections, and the terminal) and the compare Markdown, as plain rows.

The same (headers, rows) feed the terminal tables, so the terminal and the ticket show the
same numbers. A relative cell reads '297 (275–327) ↑': % of the baseline, its 95 % interval,
and an arrow only when the difference is called (corrected test and outside the noise band).
"""

from __future__ import annotations

import math

from ..analysis.compare import CompareRow, Difference
from ..analysis.stats import HIGHER, LOWER, NOT_TESTED, Verdict
from ..metrics import METRICS as REGISTRY
from .htmlkit import fmt_number
from .report_data import ReportData, is_closed_loop

ARROWS = {HIGHER: " ↑", LOWER: " ↓"}
#: Short column names for the tables (the full titles are in the HTML report).


def rel_cell(relative: float | None, v: Verdict | None) -> str:
    """'297 (275–327) ↑', '100' for the baseline, '–' when there is nothing to compare."""
    if relative is None:
        return "–"
    if v is None:
        return f"{relative:.0f}"
    if v.verdict == NOT_TESTED:  # too few repeats: the repeats' range, never called a confidence interval
        if math.isnan(v.ci_low):
            return f"{relative:.0f} (not tested)"
        return f"{relative:.0f} [range {100 * v.ci_low:.0f}–{100 * v.ci_high:.0f}, not tested]"
    return f"{relative:.0f} ({100 * v.ci_low:.0f}–{100 * v.ci_high:.0f}){ARROWS.get(v.verdict, '')}"


def shown_loads(data: ReportData, workload: str, most: int | None) -> tuple[set[int], int]:
    """The load points a summary shows (all, or ``most`` spread from the first to the last) and how many exist."""
    loads = sorted({r.point for r in data.rows if r.workload == workload})
    if most is None or len(loads) <= most:
        return set(loads), len(loads)
    picks = {loads[round(i * (len(loads) - 1) / (most - 1))] for i in range(most)}
    return picks, len(loads)


def summary_table(data: ReportData, workload: str,
                  most_loads: int | None = None) -> tuple[str, list[str], list[list[str]]]:
    """(title, headers, rows) for one workload: per load point and configuration, each metric's median and %, what
    limited it and, when a configuration spread its traffic over several storage ports, each one's share of bytes.

    ``most_loads``: show at most that many load points (the terminal's summary of a long ladder).
    """
    closed = is_closed_loop(data.plan, workload)
    headers = ["load point", "configuration", "n"]
    for m in data.metrics:
        headers += [REGISTRY[m].short, "%"]
    headers.append("limited by")
    rows = []
    shown, total = shown_loads(data, workload, most_loads)
    mine = [r for r in data.rows if r.workload == workload and r.point in shown]
    paths = {(r.point, r.configuration): data.paths.get((workload, r.point, r.configuration)) for r in mine}
    multipath = any(p is not None and p.paths > 1 for p in paths.values())
    if multipath:  # a configuration spread its traffic over several storage ports: how evenly
        headers.append("paths")
    for r in mine:
        cells = [r.load_label, r.configuration + (" *" if r.baseline else ""), str(r.repeats)]
        for m in data.metrics:
            cells += [fmt_number(r.values.get(m)),
                      rel_cell(r.relative.get(m), data.verdicts.get((m, workload, r.point, r.configuration)))]
        b = data.bottlenecks.get((workload, r.point, r.configuration))
        p = paths[(r.point, r.configuration)]
        held = b.label if b else limited_by_fault(r.point)
        rows.append(cells + [held] + ([p.label() if p else "–"] if multipath else []))
    lat = "service time" if closed else "latency"
    title = (f"{workload} — baseline {data.baseline} = 100; medians of repeats, % with 95 % CI (with fewer than "
             f"3 repeats on a side: [the repeats' range, not tested]), ↑↓ = called "
             f"difference; latency = {lat}")
    if len(shown) < total:
        title += f"; {len(shown)} of {total} load points shown (all in report.md and tables/summary.csv)"
    return title, headers, rows


def md_table(headers: list[str], rows: list[list[str]], left: list[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table; numbers right-aligned, the columns of words (or ``left``) not."""
    def esc(s: str) -> str:
        return str(s).replace("|", "\\|")
    words = left or ["load point", "configuration", "metric", "verdict", "workload", "limited by", "paths"]
    right = {i for i, h in enumerate(headers) if h not in words}
    lines = ["| " + " | ".join(esc(h) for h in headers) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def compare_rows(rows: list[CompareRow]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of a run-to-run comparison: A, B, B as % of A with its CI, corrected p, verdict."""
    # "interval": a 95 % CI from 3 repeats a side; below that only the repeats' range (and "not tested")
    headers = ["workload", "load point", "configuration", "metric", "A", "B", "B % of A", "interval", "p (corr.)",
               "verdict"]
    out = []
    for r in rows:
        out.append([r.workload, r.load_label, r.configuration, REGISTRY[r.metric].short,
                    fmt_number(r.median_a), fmt_number(r.median_b), f"{r.relative:.1f}{ARROWS.get(r.verdict, '')}",
                    f"{r.ci_low:.1f}–{r.ci_high:.1f}", f"{r.p_adjusted:.3g}", r.verdict])
    return headers, out


def compare_markdown(name_a: str, name_b: str, diffs: list[Difference], rows: list[CompareRow],
                     forced: bool, only_a: list[tuple[str, str, str]], only_b: list[tuple[str, str, str]],
                     claims: list[str] | None = None) -> str:
    """compare.md: what differs between the runs, the seed's claims in each (``claims``: report.compareclaims'
    lines), then the relative table (A = 100)."""
    out = [f"# protolab compare: A = {name_a}, B = {name_b}", "", "A = 100; B relative to A at the same workload, "
           "load point and configuration (median of repeats, 95 % bootstrap CI, Holm-corrected Welch t-test on log "
           "values).", ""]
    out += ["## What differs", ""] + ([f"- {d.text()}" for d in diffs] or ["- nothing recorded"])
    if forced and any(d.blocking for d in diffs):
        out += ["", "Compared anyway (--force): only the cells both runs measured."]
    for label, cells in (("only in A", only_a), ("only in B", only_b)):
        if cells:
            out.append(f"- cells {label} (left out): " + "; ".join(" · ".join(c) for c in cells))
    headers, table = compare_rows(rows)
    out += [""] + claims if claims else []
    out += ["", "## B relative to A", "", md_table(headers, table), "", verdict_tally(rows), ""]
    return "\n".join(out)


def verdict_tally(rows: list) -> str:
    """'3 of 12 comparisons called; 5 no clear difference; 4 not tested (fewer than 3 repeats on a side).'"""
    from ..analysis.stats import NOT_TESTED

    called = sum(1 for r in rows if r.significant)
    untested = sum(1 for r in rows if r.verdict == NOT_TESTED)
    text = f"{called} of {len(rows)} comparisons called; {len(rows) - called - untested} no clear difference"
    return text + (f"; {untested} not tested (fewer than 3 repeats on a side)." if untested else ".")


def limited_by_fault(point) -> str:
    """The 'limited by' cell of a point with no bottleneck: a faulted window's is its fault (the faults section
    measures it; analysis.bottleneck judges the windows with no fault only), else '–'."""
    fault = point.get("fault")
    return f"fault {fault} (see Faults under load)" if fault not in (None, "none") else "–"
