"""The findings: every sentence the analysis could back with its test, and the repeats that stand out."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ...analysis.findings import Finding
from ..report_data import ReportData
from .section import Page, Section

NONE_MADE = "No comparisons could be made."


@dataclass(frozen=True)
class FindingsModel:
    findings: list[Finding]
    outliers: list[Finding]  # repeats that stand out (kept in the statistics)


class FindingsSection(Section[FindingsModel]):
    name = "findings"
    title = "Findings"
    nav = "findings"

    def build(self, data: ReportData) -> FindingsModel | None:
        if not data.records:
            return None
        return FindingsModel([f for f in data.findings if f.kind != "outlier"],
                             [f for f in data.findings if f.kind == "outlier"])

    def markdown(self, m: FindingsModel) -> list[str]:
        out = ["", f"## {self.title}", "", *([f"- {f.text}" for f in m.findings] or [f"- {NONE_MADE}"])]
        if m.outliers:
            out += ["", "Repeats that stand out (kept in the statistics):", "", *(f"- {f.text}" for f in m.outliers)]
        return out

    def html(self, m: FindingsModel, page: Page) -> Markup:
        return page.render("findings", title=self.title, m=m, none_made=NONE_MADE)
