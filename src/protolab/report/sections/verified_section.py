"""Data verified (method.verify): per configuration, the MiB read back and checked after its windows and the chunks
that failed a check — "N MiB verified, 0 mismatches" or the first bad offset."""

from __future__ import annotations

from markupsafe import Markup

from ...analysis.verification import ConfigurationVerified
from ..report_data import ReportData
from .section import Page, Section


class VerifiedSection(Section[list[ConfigurationVerified]]):
    name = "verified"
    title = "Data verified"
    nav = "Data verified"

    def build(self, data: ReportData) -> list[ConfigurationVerified] | None:
        return list(data.verified) or None

    def markdown(self, m: list[ConfigurationVerified]) -> list[str]:
        return ["", f"## {self.title}", "", _HOW, "", *(f"- {c.sentence()}" for c in m)]

    def html(self, m: list[ConfigurationVerified], page: Page) -> Markup:
        return page.render("verified", title=self.title, how=_HOW, m=m)


_HOW = ("Every block written carried fio's checksum; during each window fio read back each block it wrote (those "
        "reads are among the window's I/Os), and after it every block of the window's regions was read back and "
        "checked.")
