"""The report's data model: charts, their series, and `ReportData` (everything a report shows about one run).

Every section module (report.sections) and chart builder builds on these types; `tables.build` assembles them.
Nothing here imports another report module but report.chart (a chart and its series). Pure data, no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..analysis.findings import Finding, Key
from ..analysis.latency import PERCENTILES
from ..analysis.relative import Row
from ..analysis.stats import Verdict
from ..plan.coordinates import Point, point_of
from ..plan.migrate import migrate
from ..plan.model import Plan
from ..results.manifest import Manifest
from ..results.records import CellRecord
from .chart import Chart

PCT_KEYS = [f"p{p:g}" for p in PERCENTILES]


@dataclass
class ReportData:
    """Everything a report shows about one run."""

    run_id: str
    manifest: Manifest
    plan: Plan | None
    baseline: str
    workloads: list[str]
    configurations: list[str]
    rows: list[Row]
    verdicts: dict[Key, Verdict]
    metrics: list[str]  # relative metrics measured in this run
    absent: list[str]  # metrics not measured in this run
    findings: list[Finding]
    charts: list[Chart] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # section → "not measured in this run" etc.
    records: list[CellRecord] = field(default_factory=list)
    series: dict[int, dict[str, list[float]]] = field(default_factory=dict)  # record seq → host/'all' → IOPS
    cells: dict[tuple[str, Point, str], list[CellRecord]] = field(default_factory=dict)  # (w, load, config) → repeats
    bottlenecks: dict[tuple[str, Point, str], Any] = field(default_factory=dict)  # cell → bottleneck.Bottleneck
    trends: dict[tuple[str, str], list[Any]] = field(default_factory=dict)  # (w, config) → each long run's Trend
    matrices: list[Any] = field(default_factory=list)  # analysis.summary.Matrix per workload
    headlines: list[Any] = field(default_factory=list)  # analysis.headlines.Headline, best first
    alpha: float = 0.05  # the significance level and noise band the verdicts were called with
    noise: float = 0.02

    def index(self) -> None:
        """Group the records by workload, load point and configuration (read once, used by every chart)."""
        self.cells = {}
        for r in self.records:
            self.cells.setdefault((r.workload, point_of(r), r.configuration), []).append(r)


#: Above this many load points a workload gets one chart per kind (load points on the x axis), not one
#: chart per load point: a study of 100 load points is read from one chart with 100 groups, not 100 files.
DETAIL_LOADS = 4


def slug(*parts: str) -> str:
    """A file-name-safe id: 'iops-tr3808-4k'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(parts)).strip("-").lower()


def plan_of(manifest: Manifest) -> Plan | None:
    """The plan stored in the manifest (in today's plan format), or None when it no longer validates (the report
    then uses the records)."""
    try:
        return Plan.model_validate(migrate(manifest.plan or {}, manifest.plan_format))
    except ValidationError:
        return None


def is_closed_loop(plan: Plan | None, workload: str) -> bool:
    """Fixed outstanding I/Os without a rate cap or a timed replay: latency is service time."""
    if plan is None:
        return True
    w = next((w for w in plan.workloads if w.name == workload), None)
    return w is None or (w.rate_iops is None and getattr(w, "replay", None) is None)
