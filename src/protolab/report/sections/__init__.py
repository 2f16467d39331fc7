"""The report's sections, in the order report.md and report.html both show them.

Each is a `Section` (report.sections.section): ``build(data)`` makes its model from the report's data (None: it has
nothing to say for this run, and is in neither format), ``markdown(model)`` gives report.md's lines and
``html(model, page)`` report.html's markup, most through its template ``templates/section-<name>.html.j2``.
report.md and report.html both iterate `SECTIONS`, so a section exists in both formats or in neither. A new
section is one module here and its place in `SECTIONS`.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from ..report_data import ReportData
from .breakdown_section import BreakdownSection
from .capacity_section import CapacitySection
from .ceiling_section import CeilingSection
from .crossover_section import CrossoverSection
from .environment_section import EnvironmentSection
from .errors_section import ErrorsSection
from .faults_section import FaultsSection
from .findings_section import FindingsSection
from .heatmap_section import HeatmapSection
from .method_section import MethodSection
from .not_measured_section import NotMeasuredSection
from .percentiles_section import PercentilesSection
from .plan_section import PlanSection
from .section import Heading, Page, Section
from .seed_section import SeedSection
from .series_section import SeriesSection
from .sessions_section import SessionsSection
from .stages_section import StagesSection
from .summary_section import SummarySection
from .verified_section import VerifiedSection
from .vm_section import VmSection
from .workloads_section import WorkloadsSection

#: The summary opens every report (the matrix and headlines: the whole picture first) — but a sweep's, which opens
#: with its crossover (how far each comparison reaches); the seed's claims follow in a built-in study's report: what
#: the seed found, and whether this run reproduced it; without a sweep, each protocol's added time per I/O follows.
SECTIONS: list[Section[Any]] = [
    CrossoverSection(first=True), SummarySection(), SeedSection(), CrossoverSection(first=False), CapacitySection(),
    FaultsSection(), BreakdownSection(), PlanSection(),
    EnvironmentSection(), ErrorsSection(), VerifiedSection(), FindingsSection(),
    WorkloadsSection(), NotMeasuredSection(), StagesSection(), SessionsSection(), VmSection(), PercentilesSection(),
    HeatmapSection(), SeriesSection(), CeilingSection(), MethodSection(),
]


def built(data: ReportData) -> list[tuple[Section[Any], Any]]:
    """Each section that has something to say for this run, with its model, in report order."""
    out = []
    for s in SECTIONS:
        model = s.build(data)
        if model is not None:
            out.append((s, model))
    return out


def run_line(data: ReportData) -> str:
    """Both pages' line under the title: 'status complete · started … · ended … · 8 measured windows'."""
    m = data.manifest
    return (f"status {m.status or 'unknown'} · started {m.started or '–'} · ended {m.ended or '–'} · "
            f"{len(data.records)} measured windows")


def report_markdown(data: ReportData, sections: list[tuple[Section[Any], Any]] | None = None) -> str:
    """report.md: its title and run line, then every section's lines (``sections``: `built(data)`, when already
    made)."""
    name = data.plan.name if data.plan else data.run_id
    lines = [f"# protolab: {name} — run {data.run_id}", "", run_line(data)]
    for s, m in built(data) if sections is None else sections:
        lines += s.markdown(m)
    return "\n".join([*lines, ""])


def report_html(data: ReportData, page: Page, sections: list[tuple[Section[Any], Any]] | None = None
                ) -> tuple[list[Heading], list[Markup]]:
    """report.html's headings (its navigation) and every section's markup, in report order (``sections``:
    `built(data)`, when already made)."""
    sections = built(data) if sections is None else sections
    return [h for s, m in sections for h in s.headings(m)], [s.html(m, page) for s, m in sections]
