"""The report's data model: charts, their series, and `ReportData` (everything a report shows about one run).

Every section module (report.sections) and chart builder builds on these types; `tables.build` assembles them in
one pass: first the run as read (`RunData`: the records grouped, their rows and metrics, which the chart builders
take), then the statistics, charts and sentences from it, and `ReportData` is made once from all the parts. Both
are frozen: a section is a function of the model, never a step that changes it. Nothing here imports another
report module but report.chart (a chart and its series). Pure data, no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Iterable

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

if TYPE_CHECKING:
    from ..analysis.bottleneck import Bottleneck
    from ..analysis.capacity import Ladder
    from ..analysis.claims import ClaimVerdict
    from ..analysis.crossover import Added, AtPoint
    from ..analysis.derived import Figures
    from ..analysis.fault_figures import FaultRow
    from ..analysis.headlines import Headline
    from ..analysis.paths import PathShare
    from ..analysis.summary import Matrix
    from ..analysis.time_breakdown import BreakdownRow
    from ..analysis.trend import Trend
    from ..analysis.verification import ConfigurationVerified

PCT_KEYS = [f"p{p:g}" for p in PERCENTILES]

#: (workload, load point, configuration): a cell of the report, its repeats pooled
CellKey = tuple[str, Point, str]


def by_cell(records: Iterable[CellRecord]) -> dict[CellKey, list[CellRecord]]:
    """The records grouped by workload, load point and configuration (read once, used by every chart)."""
    out: dict[CellKey, list[CellRecord]] = {}
    for r in records:
        out.setdefault((r.workload, point_of(r), r.configuration), []).append(r)
    return out


@dataclass(frozen=True)
class CrossoverData:
    """What the crossover and added-time sections say of one run."""

    swept: str | None  # "service_time" / "link_rate", None without a sweep
    band: float  # a fraction (0.09)
    band_source: str  # where the band comes from (analysis.crossover.band_of)
    both: bool = False  # both coordinates swept: no crossover is stated
    added: dict[tuple[str, str], Added] = field(default_factory=dict)  # (workload, configuration) → o
    points: list[AtPoint] = field(default_factory=list)  # every configuration at every swept point
    parallelism: int | None = None  # the array's servers (None: a RAM pool, or no lab)
    ram: bool = False  # the lab's pool answers from RAM (no device model)
    # each configuration's crossover at one workload and load point, in words (analysis.crossover.sentence), by
    # (workload, total OIO, load point, configuration), as `points` group
    sentences: dict[tuple[str, int, str, str], str] = field(default_factory=dict)
    below_us: dict[tuple[str, str], float] = field(default_factory=dict)  # as `added`: the baseline's latency per
    #                                                                        I/O below which o costs more than the band
    slow: str = ""  # a RAM pool: the plan.storage preset its reader is pointed at ('hdd-array')
    slow_cost: dict[tuple[str, str], float] = field(default_factory=dict)  # as `added`: the share of IOPS o costs
    #                                                                         at that preset's service time


@dataclass(frozen=True)
class CapacityData:
    """What the capacity section says of a run with a rate ladder (plan.rate_ladder, analysis.capacity)."""

    objective: str  # 'p99 ≤ 2 ms'
    limit_us: float
    percentile: str  # 'p99'
    arrivals: str  # 'poisson' / 'uniform'
    refine: int  # the search's extra steps, at most, per configuration
    ladders: list[Ladder] = field(default_factory=list)  # each configuration's, at each workload and point
    saturation: dict[tuple[str, str], float] = field(default_factory=dict)  # the lab's device model's P/s, by
    #                                                                          (workload, configuration)


@dataclass(frozen=True)
class FaultData:
    """What the faults section says of a run with [[faults]] (plan.faults, analysis.fault_figures)."""

    rows: list[FaultRow]  # each configuration at each workload and point (the fault one of its coordinates)
    sentences: list[tuple[str, str, str]]  # (workload, point label, the configurations compared after a fault)


@dataclass(frozen=True, kw_only=True)
class RunData:
    """One run as the report reads it, before any statistics: what the chart builders take."""

    run_id: str
    manifest: Manifest
    plan: Plan | None
    baseline: str
    workloads: list[str]
    configurations: list[str]
    rows: list[Row]
    metrics: list[str]  # relative metrics measured in this run
    absent: list[str]  # metrics not measured in this run
    records: list[CellRecord] = field(default_factory=list)
    series: dict[int, dict[str, list[float]]] = field(default_factory=dict)  # record seq → host/'all' → IOPS
    cells: dict[CellKey, list[CellRecord]] = field(default_factory=dict)  # `by_cell(records)`: the repeats
    alpha: float = 0.05  # the significance level and noise band the verdicts were called with
    noise: float = 0.02

    def parts(self) -> dict[str, object]:
        """Its fields by name, to make a `ReportData` of this run with the rest."""
        return {f.name: getattr(self, f.name) for f in fields(RunData)}


@dataclass(frozen=True, kw_only=True)
class ReportData(RunData):
    """Everything a report shows about one run: the run as read and what the analysis made of it."""

    verdicts: dict[Key, Verdict]
    findings: list[Finding]
    charts: list[Chart] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # section → "not measured in this run" etc.
    bottlenecks: dict[CellKey, Bottleneck] = field(default_factory=dict)
    paths: dict[CellKey, PathShare] = field(default_factory=dict)  # a cell's bytes per storage port (when it has)
    trends: dict[tuple[str, str], list[Trend | None]] = field(default_factory=dict)  # (w, config) → long runs'
    matrices: list[Matrix] = field(default_factory=list)  # the summary's, one per workload
    headlines: list[Headline] = field(default_factory=list)  # best first
    claims: list[ClaimVerdict] = field(default_factory=list)  # the seed's claims, judged on this run
    reach: list[tuple[dict[str, int], list[ClaimVerdict]]] = field(default_factory=list)  # … at each swept point
    crossover: CrossoverData | None = None  # the sweep's crossover and each configuration's added time per I/O
    capacity: CapacityData | None = None  # the rate ladder's knee and capacity under the objective (plan.rate_ladder)
    faults: FaultData | None = None  # the faults' stall, errors, degraded IOPS and recovery (plan.faults)
    judged: str = ""  # a swept plan: where its seed's claims are judged, in one sentence (analysis.claims.judged_at)
    figures: dict[str, list[Figures]] = field(default_factory=dict)  # configuration → its records' derived figures
    verified: list[ConfigurationVerified] = field(default_factory=list)  # method.verify, per configuration
    breakdown: list[BreakdownRow] = field(default_factory=list)  # where each cell's mean latency went (issue 46)


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
    if getattr(plan, "capacity", None) is not None:  # the ladder's rate paces every workload (plan.rate_ladder)
        return False
    w = next((w for w in plan.workloads if w.name == workload), None)
    return w is None or (w.rate_iops is None and getattr(w, "replay", None) is None)
