"""What the chart sections share: the charts of one `Chart.section` (built by report.detail, .longrun_charts,
.stagecharts and tables.ceiling_charts) with the note that says what is missing or how to read them.

On the page each chart is drawn with its table; in report.md it is one line, its title and the CSV of its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ..chart import Chart
from ..report_data import ReportData
from .section import Page, Section, chart_lines


@dataclass(frozen=True)
class ChartList:
    charts: list[Chart]
    note: str  # '' when there is nothing to say


class ChartSection(Section[ChartList]):
    """The charts whose `Chart.section` is the section's name; ``always``: shown for its note alone."""

    always: bool

    def build(self, data: ReportData) -> ChartList | None:
        charts = [c for c in data.charts if c.section == self.name]
        note = data.notes.get(self.name, "")
        if not charts and not (self.always and note):
            return None
        return ChartList(charts, note)

    def markdown(self, m: ChartList) -> list[str]:
        out = ["", f"## {self.title}"]
        if m.note:
            out += ["", f"{m.note[0].upper()}{m.note[1:]}."]
        return out + (["", *chart_lines(m.charts)] if m.charts else [])

    def html(self, m: ChartList, page: Page) -> Markup:
        return page.render("charts", id=self.name, title=self.title, m=m)
