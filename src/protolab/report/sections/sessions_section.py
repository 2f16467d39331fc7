"""The sessions of a run measured in more than one (`protolab resume`): which session measured which cells."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from ..report_data import ReportData
from .section import Page, Section


@dataclass(frozen=True)
class SessionLine:
    number: int
    started: str
    ended: str
    how: str
    cells: list[str]
    fio: str | None
    kernel: str | None

    def text(self) -> str:
        n = len(self.cells)
        listed = f" ({', '.join(self.cells[:6])}{', …' if n > 6 else ''})" if self.cells else ""
        tools = f"; fio {self.fio}, kernel {self.kernel}" if self.fio else ""
        return (f"session {self.number}: {self.started} – {self.ended}, ended {self.how}, "
                f"{n} cell{'s' if n != 1 else ''} in this report{listed}{tools}")


class SessionsSection(Section[list[SessionLine]]):
    name = "sessions"
    title = "Sessions"
    nav = "sessions"

    def build(self, data: ReportData) -> list[SessionLine] | None:
        sessions = data.manifest.sessions
        if len(sessions) < 2:
            return None
        out = []
        for s in sessions:
            n, prov = s.session, s.provenance
            how = f"killed (found at {s.killed})" if s.killed else s.how
            out.append(SessionLine(n, s.started or "?", s.ended or "?", how,
                                   [r.cell_id for r in data.records if r.session == n],
                                   prov.fio_version if prov else None, prov.kernel if prov else None))
        return out

    def markdown(self, model: list[SessionLine]) -> list[str]:
        return ["", "## Sessions", "", "The run was measured in more than one session (`protolab resume`):", "",
                *(f"- {s.text()}" for s in model)]

    def html(self, model: list[SessionLine], page: Page) -> Markup:
        items = "".join(f"<li>{escape(s.text())}</li>" for s in model)
        return Markup(f'<section id="sessions">\n<h2>Sessions</h2>\n<p>The run was measured in more than one '
                      f'session (<code>protolab resume</code>):</p>\n<ul>{items}</ul>\n</section>')
