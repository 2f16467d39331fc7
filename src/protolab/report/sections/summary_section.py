"""The summary, first in the report: per workload the matrix of configurations × metrics (analysis.summary), then
at most 10 headline sentences (analysis.headlines). The per-metric sentences follow in the findings section."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ...analysis.headlines import Headline
from ...analysis.summary import ABSOLUTE, BASELINE, HIGHER, LOWER, MIXED, SAME, UNTESTED, Cell, Matrix
from ...metrics import METRICS
from ..htmlkit import fmt_number
from ..markdown import md_table
from ..report_data import ReportData
from .section import Page, Section

ARROW = {HIGHER: "↑", LOWER: "↓"}
LEGEND = ("{baseline} = 100 (its row: its own values, median over load points and their range); a cell: the median "
          "over load points of the % of {baseline}, and the interval spanning the load points' 95 % intervals. "
          "↑ ↓ (coloured: green better, red worse): a difference called at every load point; mixed: called at some; "
          "≈: no clear difference at any load point, with MDD, the smallest difference this run could have detected "
          "(80 % power, Welch's test on log values at the α it was tested at after the Holm correction); n.t.: not "
          "tested (why in the notes). A column marked (absolute) is one where {baseline} has no value or zero (a local "
          "device has no server and no network): its cells are each configuration's own value with its unit, not a %.")
ABSOLUTE_MARK = " (absolute)"


@dataclass(frozen=True)
class Shown:
    """A cell as both formats show it: its text, its class on the page, its note (title and footnote)."""

    text: str
    css: str
    note: str = ""


def shown(c: Cell, metric: str) -> Shown:
    """The cell's text: '38 (30–46) ↓', '≈ 101 (97–105); MDD 6 %', 'mixed 85 (70–104)', 'n.t.', '12,345'."""
    interval = f" ({c.low:.0f}–{c.high:.0f})" if c.low is not None and c.high is not None else ""
    if c.state in (BASELINE, ABSOLUTE):
        rng = f" ({fmt_number(c.low)}–{fmt_number(c.high)})" if c.low is not None else ""
        if c.state == ABSOLUTE:
            return Shown(f"{fmt_number(c.value)}{rng} {METRICS[metric].unit}", "abs",
                         f"{METRICS[metric].unit}, absolute: the baseline has no value to compare with")
        return Shown(f"{fmt_number(c.value)}{rng}", "base", METRICS[metric].unit)
    if c.state in (HIGHER, LOWER):
        return Shown(f"{c.value:.0f}{interval} {ARROW[c.state]}", f"called {'good' if c.better else 'bad'}",
                     f"{METRICS[metric].more if c.state == HIGHER else METRICS[metric].less} at every load point")
    if c.state == SAME:
        mdd = f"; MDD {c.detectable:.0f} %" if c.detectable is not None else ""
        return Shown(f"≈ {c.value:.0f}{interval}{mdd}", "same", "no clear difference at any load point")
    if c.state == MIXED:
        return Shown(f"mixed {c.value:.0f}{interval}", "mixed", c.why)
    if c.state == UNTESTED:
        return Shown("n.t.", "nt", f"not tested: {c.why}")
    return Shown("–", "none")


@dataclass(frozen=True)
class Table:
    workload: str
    caption: str
    headers: list[str]
    rows: list[list[Shown]]
    notes: list[str]  # the n.t. cells' reasons, numbered in the cells


@dataclass(frozen=True)
class SummaryModel:
    tables: list[Table]
    headlines: list[Headline]
    legend: str


def _table(m: Matrix) -> Table:
    absolute = {k for k in m.metrics if any(r.cells[k].state == ABSOLUTE for r in m.rows)}
    headers = ["configuration", *(METRICS[k].short + ABSOLUTE_MARK * (k in absolute) for k in m.metrics),
               "held back by"]
    notes: list[str] = []
    rows = []
    for r in m.rows:
        cells = [Shown(r.configuration + (" (baseline)" if r.baseline else ""), "conf")]
        for k in m.metrics:
            s = shown(r.cells[k], k)
            if s.css == "nt":  # numbered once per distinct reason
                if s.note not in notes:
                    notes.append(s.note)
                s = Shown(f"n.t.[{notes.index(s.note) + 1}]", "nt", s.note)
            cells.append(s)
        rows.append([*cells, Shown(r.bottleneck or "–", "held")])
    loads = len(m.loads)
    caption = (f"{m.workload} — {m.baseline} = 100; {loads} load point{'s' if loads != 1 else ''}"
               f"{' (' + ', '.join(m.loads) + ')' if 1 < loads <= 4 else ''}")
    return Table(m.workload, caption, headers, rows, notes)


class SummarySection(Section[SummaryModel]):
    name = "summary"
    title = "Summary"
    nav = "summary"

    def build(self, data: ReportData) -> SummaryModel | None:
        tables = [_table(m) for m in data.matrices if m.metrics and len(m.rows) > 1]
        if not tables and not data.headlines:
            return None
        return SummaryModel(tables, data.headlines, LEGEND.format(baseline=data.baseline))

    def markdown(self, m: SummaryModel) -> list[str]:
        out = ["", f"## {self.title}"]
        for t in m.tables:
            out += ["", f"**{t.caption}**", "",
                    md_table(t.headers, [[c.text for c in row] for row in t.rows], left=["configuration",
                                                                                         "held back by"])]
            out += [""] + [f"[{i}] {n}" + "  " for i, n in enumerate(t.notes, 1)] if t.notes else []
        out += ["", m.legend]
        if m.headlines:
            out += ["", "### Headlines", "", *(f"- {h.text}" for h in m.headlines)]
        return out

    def html(self, m: SummaryModel, page: Page) -> Markup:
        return page.render("summary", title=self.title, m=m)


COMPARE_LEGEND = ("run A = 100: a cell is the median over load points of run B's % of run A, and the interval "
                  "spanning the load points' 95 % intervals. ↑ ↓ (coloured: green better, red worse): a difference "
                  "called at every load point; mixed: called at some; ≈: no clear difference at any load point.")


def compare_summary(matrices: list[Matrix]) -> SummaryModel | None:
    """`protolab compare`'s summary (analysis.summary.compare_matrices), without headlines; None when empty."""
    tables = []
    for m in matrices:
        if not m.metrics or not m.rows:
            continue
        t = _table(m)
        tables.append(Table(t.workload, f"{m.workload} — run A = 100", t.headers[:-1], [r[:-1] for r in t.rows],
                            t.notes))
    return SummaryModel(tables, [], COMPARE_LEGEND) if tables else None
