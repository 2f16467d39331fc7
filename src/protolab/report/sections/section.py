"""A report section: one model built from the report's data, rendered to Markdown and to HTML.

`build` returns None when the section has nothing to say for this run; then neither report.md nor
report.html shows it. So a section exists in both formats or in neither.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, NamedTuple, TypeVar

from jinja2 import Environment, Template
from markupsafe import Markup

from ..chart import Chart
from ..htmlkit import TEMPLATES, environment, read
from ..report_data import ReportData

M = TypeVar("M")


class Heading(NamedTuple):
    """One heading a section shows: its anchor in report.html, its title (in both formats), its link in the
    page's navigation ('' = none)."""

    anchor: str
    title: str
    nav: str


@dataclass
class Page:
    """What an HTML rendering needs beside its model: the section templates and each chart drawn (figure and
    table, report.html's chart block)."""

    chart: Callable[[Chart], Markup]
    env: Environment = field(default_factory=environment)
    _templates: dict[str, Template] = field(default_factory=dict)

    def render(self, name: str, **context: Any) -> Markup:
        """templates/section-<name>.html.j2 rendered with ``context`` (and ``chart``)."""
        if name not in self._templates:
            self._templates[name] = self.env.from_string(read(TEMPLATES, f"section-{name}.html.j2"))
        return Markup(self._templates[name].render(chart=self.chart, **context))


class Section(ABC, Generic[M]):
    """One section of the report (see the module's text)."""

    name: str  # the anchor of its <section> in report.html
    title: str  # its heading, in both formats
    nav: str  # its link in the page's navigation ('' = none)

    @abstractmethod
    def build(self, data: ReportData) -> M | None:
        """The section's model for this run, or None when it has nothing to say."""

    @abstractmethod
    def markdown(self, model: M) -> list[str]:
        """report.md's lines of the section (a leading empty line separates it from the one before)."""

    @abstractmethod
    def html(self, model: M, page: Page) -> Markup:
        """report.html's markup of the section (its <section> element(s), headings included)."""

    def headings(self, model: M) -> list[Heading]:
        """The headings the section shows for this model (one, unless it repeats a part per workload)."""
        return [Heading(self.name, self.title, self.nav)]


def chart_lines(charts: list[Chart]) -> list[str]:
    """report.md's line per chart: its title and the CSV of its numbers (its picture is in report.html and
    figures/<id>.png|svg)."""
    return [f"- {c.title}: `tables/{c.id}.csv`" for c in charts]
