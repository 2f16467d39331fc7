"""The report's sections as one model each, rendered to Markdown and to HTML from it.

A section's ``build(data)`` makes its model from the report's data (None: the section has nothing to say for this
run, and is in neither format); ``markdown(model)`` gives report.md's lines and ``html(model)`` report.html's
markup. `SECTIONS` is their order; report.md and report.html both iterate it, so a section exists in both formats
or in neither. A new section is one module here and one entry in `SECTIONS`.
"""

from __future__ import annotations

from typing import Any, Protocol

from markupsafe import Markup

from ..model import ReportData


class Section(Protocol):
    """One section of the report (see the package's text)."""

    name: str  # its anchor in report.html
    title: str  # its heading, in both formats

    def build(self, data: ReportData) -> Any | None:
        """The section's model for this run, or None when it has nothing to say."""

    def markdown(self, model: Any) -> list[str]:
        """report.md's lines of the section, heading first."""

    def html(self, model: Any) -> Markup:
        """report.html's markup of the section (a <section> with its heading)."""


def sections() -> list[Section]:
    """The sections after the per-workload tables, in report order."""
    from .seed import SeedSection
    from .sessions import SessionsSection
    from .vms import VmSection

    return [SessionsSection(), VmSection(), SeedSection()]


def rendered(data: ReportData) -> list[tuple[Section, Any]]:
    """Each section with its model, for the sections that have something to say in this run."""
    out = []
    for s in sections():
        model = s.build(data)
        if model is not None:
            out.append((s, model))
    return out


def markdown_lines(data: ReportData) -> list[str]:
    """report.md's lines of every section."""
    return [line for s, m in rendered(data) for line in s.markdown(m)]


def html_blocks(data: ReportData) -> list[tuple[str, str, Markup]]:
    """report.html's (anchor, title, markup) of every section."""
    return [(s.name, s.title, s.html(m)) for s, m in rendered(data)]
