"""compare.html: one self-contained page for `protolab compare A B` — what differs, the verdicts' tally, B relative
to A (A = 100) as one chart per workload and metric (drawn by report.figures, like a report's), and the
comparison table (compare.md's and compare.csv's rows).

The page has its own model, `ComparePage`, built from analysis.compare's rows; each chart's table is also written
as tables/<chart id>.csv beside the page, as a report's are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from ..analysis.compare import CompareRow, Difference
from ..metrics import title as metric_title
from .chart import Chart, Series
from .htmlkit import HTML_ROWS, STATIC, TEMPLATES, environment, read, script_safe
from .markdown import compare_rows, verdict_tally
from .report_data import slug

#: The comparison table's columns that hold words (left-aligned on the page).
WORDS = ("workload", "load point", "configuration", "metric", "verdict")
#: A side needs this many repeats for a confidence interval (below: the page draws no whisker).
MIN_REPEATS_CI = 3


@dataclass(frozen=True)
class ComparePage:
    """Everything compare.html shows."""

    name_a: str
    name_b: str
    differences: list[str]  # 'environment kernel (A: …; B: …)'
    forced: bool  # blocking differences were compared anyway (--force)
    left_out: list[str]  # 'cells only in A (left out): …'
    tally: str
    headers: list[str]  # the comparison table: compare.md's columns and rows
    table: list[list[str]]
    charts: list[Chart]
    noise: float = 0.02
    #: The summary matrix (configurations × metrics, B as % of A; analysis.summary.compare_matrices): rendered
    #: markup shown between the tally and the charts. None: the page has no matrix.
    summary_matrix: Markup | None = field(default=None)
    #: The seed's claims in A and in B (report.compareclaims), rendered; None: neither run states a claim.
    claims: Markup | None = field(default=None)


def compare_charts(rows: list[CompareRow]) -> list[Chart]:
    """One chart per workload and metric of a comparison: B as % of A at each load point, per configuration, with
    its 95 % interval as whiskers (none where a side has fewer than MIN_REPEATS_CI repeats)."""
    out = []
    for w in dict.fromkeys(r.workload for r in rows):
        for m in dict.fromkeys(r.metric for r in rows if r.workload == w):
            mine = [r for r in rows if r.workload == w and r.metric == m]
            loads = list(dict.fromkeys(r.load_label for r in mine))
            by = {(r.configuration, r.load_label): r for r in mine}
            series = []
            for c in dict.fromkeys(r.configuration for r in mine):
                got = [by.get((c, lb)) for lb in loads]
                tested = [r is not None and min(r.n_a, r.n_b) >= MIN_REPEATS_CI for r in got]
                series.append(Series(c, [r.relative if r else None for r in got],
                                     [r.ci_low if r and t else None for r, t in zip(got, tested)],
                                     [r.ci_high if r and t else None for r, t in zip(got, tested)]))
            table = [{"load point": r.load_label, "configuration": r.configuration, "verdict": r.verdict,
                      "B % of A": r.relative, "CI low %": r.ci_low, "CI high %": r.ci_high,
                      "p (corrected)": r.p_adjusted, "n A": r.n_a, "n B": r.n_b, "median A": r.median_a,
                      "median B": r.median_b} for r in mine]
            out.append(Chart(slug("compare", m, w), "relative", "metrics", w,
                             f"{w} — {metric_title(m)}, B relative to A",
                             f"A = 100 at every load point; whiskers: 95 % CI (none below {MIN_REPEATS_CI} repeats "
                             "a side)", "% of A", loads, series, table))
    return out


def compare_page(name_a: str, name_b: str, diffs: list[Difference], rows: list[CompareRow], forced: bool,
                 only_a: list[tuple[str, str, str]], only_b: list[tuple[str, str, str]], *,
                 noise: float = 0.02, claims: Markup | None = None) -> ComparePage:
    """The page's model from analysis.compare's differences, rows and unmatched cells."""
    left_out = [f"cells {label} (left out): " + "; ".join(" · ".join(c) for c in cells)
                for label, cells in (("only in A", only_a), ("only in B", only_b)) if cells]
    headers, table = compare_rows(rows)
    return ComparePage(name_a, name_b, [d.text() for d in diffs], forced and any(d.blocking for d in diffs),
                       left_out, verdict_tally(rows), headers, table, compare_charts(rows), noise,
                       summary_html(rows), claims)


def summary_html(rows: list[CompareRow]) -> Markup | None:
    """The summary matrix of the comparison (report.sections.summary_section's, run A = 100), as the report draws it."""
    from ..analysis.summary import compare_matrices
    from .sections.section import Page
    from .sections.summary_section import SummarySection, compare_summary

    model = compare_summary(compare_matrices(rows, "A"))
    return SummarySection().html(model, Page(chart=lambda c: Markup(""))) if model is not None else None


def render_compare(page: ComparePage, drawn: dict) -> str:
    """compare.html: the page's header and overview, the summary matrix when there is one, each chart with its
    table, then the whole comparison table. ``drawn`` maps chart ids to report.figures.Drawn."""
    env = environment()
    chart_tpl = env.from_string(read(TEMPLATES, "chart.html.j2"))

    def chart_block(c: Chart) -> Markup:
        columns = list(c.table[0]) if c.table else []
        numeric = {col for col in columns if col not in WORDS}
        svg = drawn[c.id].svg
        rows = c.table[:HTML_ROWS]
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric,
                                       svg=Markup(svg[svg.index("<svg"):]), series=len(c.series),
                                       cut=len(c.table) - len(rows), baseline=None))

    tpl = env.from_string(read(TEMPLATES, "compare.html.j2"))
    return tpl.render(p=page, chart_block=chart_block, noise_pct=f"{page.noise * 100:g}", words=WORDS,
                      limit=HTML_ROWS, errors_js=script_safe(read(STATIC, "errors.js")),
                      css=Markup(read(STATIC, "report.css")))


def chart_tables(page: ComparePage) -> list[tuple[str, list[dict[str, Any]]]]:
    """(chart id, its table's rows): what tables/<id>.csv holds beside compare.html."""
    return [(c.id, c.table) for c in page.charts]
