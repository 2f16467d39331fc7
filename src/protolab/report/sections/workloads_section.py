"""One part per workload: the summary table (each metric's median and % of the baseline with its interval, what
limited each cell; report.markdown's rows, also the terminal's) and, on the page, each relative metric's chart."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ..chart import Chart
from ..htmlkit import HTML_ROWS
from ..markdown import md_table, summary_table
from ..report_data import ReportData
from .section import Heading, Page, Section

#: Summary columns that hold words, not numbers (left-aligned on the page).
WORDS = ("load point", "configuration", "limited by", "paths")


@dataclass(frozen=True)
class WorkloadPart:
    name: str
    caption: str  # what the table shows: the baseline, medians, intervals, arrows
    headers: list[str]
    rows: list[list[str]]
    charts: list[Chart]


class WorkloadsSection(Section[list[WorkloadPart]]):
    name = "w"
    title = "Per workload and load point"
    nav = ""

    def build(self, data: ReportData) -> list[WorkloadPart] | None:
        out = []
        for w in data.workloads:
            caption, headers, rows = summary_table(data, w)
            out.append(WorkloadPart(w, caption, headers, rows,
                                    [c for c in data.charts if c.section == "metrics" and c.workload == w]))
        return out or None

    def markdown(self, model: list[WorkloadPart]) -> list[str]:
        # the caption begins with the workload's name: it is the heading
        return [line for p in model for line in ("", f"## {p.caption}", "", md_table(p.headers, p.rows))]

    def html(self, model: list[WorkloadPart], page: Page) -> Markup:
        return page.render("workloads", parts=model, words=WORDS, limit=HTML_ROWS)

    def headings(self, model: list[WorkloadPart]) -> list[Heading]:
        return [Heading(f"w-{i}", p.name, p.name) for i, p in enumerate(model, 1)]
