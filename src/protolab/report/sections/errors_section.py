"""Measured windows that had I/O errors: their numbers are kept, but are not to be trusted."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ..report_data import ReportData
from .section import Page, Section

#: At most this many windows with errors are named one by one (the count covers them all).
MOST_NAMED = 20


@dataclass(frozen=True)
class FailedWindow:
    cell_id: str
    errors: int
    messages: list[str]  # fio's first two messages

    def text(self) -> str:
        return f"{self.cell_id}: {self.errors} error(s): {'; '.join(self.messages)}"


@dataclass(frozen=True)
class ErrorsModel:
    count: int
    named: list[FailedWindow]

    def headline(self) -> str:
        return f"{self.count} measured window{'s' if self.count != 1 else ''} had I/O errors"


class ErrorsSection(Section[ErrorsModel]):
    name = "errors"
    title = "I/O errors"
    nav = "I/O errors"

    def build(self, data: ReportData) -> ErrorsModel | None:
        failed = [r for r in data.records if r.result.errors]
        if not failed:
            return None
        return ErrorsModel(len(failed), [FailedWindow(r.cell_id, r.result.errors, list(r.result.error_messages[:2]))
                                         for r in failed[:MOST_NAMED]])

    def markdown(self, m: ErrorsModel) -> list[str]:
        return ["", f"## {self.title}", "", f"**{m.headline()}**; their numbers are kept but are not trustworthy:", "",
                *(f"- {w.text()}" for w in m.named)]

    def html(self, m: ErrorsModel, page: Page) -> Markup:
        return page.render("errors", title=self.title, m=m)
