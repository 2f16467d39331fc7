"""What this run did not measure: the relative metrics absent from every record (a testbed's own metrics, such as
the hypervisor's CPU, are not missing elsewhere)."""

from __future__ import annotations

from markupsafe import Markup

from ...analysis.findings import METRICS
from ..report_data import ReportData
from .section import Page, Section


class NotMeasuredSection(Section[list[str]]):
    name = "not-measured"
    title = "Not measured in this run"
    nav = ""

    def build(self, data: ReportData) -> list[str] | None:
        return [METRICS[m].title for m in data.absent if m in METRICS] or None

    def markdown(self, titles: list[str]) -> list[str]:
        return ["", f"{self.title}: {', '.join(titles)}."]

    def html(self, titles: list[str], page: Page) -> Markup:
        return page.render("notmeasured", title=self.title, titles=titles)
