"""Run-to-run comparison: the same study measured in two environments (A = 100, B relative to it).

Pure: takes two manifests (each stored plan in today's plan format) and their records. Cells are matched by
workload, load point (hosts × streams × OIO, not its position) and configuration.
Runs whose workloads or load points differ are refused unless forced; every other
difference (configurations, method, environment) is reported, never hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Any, Iterable

from ..errors import ProtolabError
from ..plan.coordinates import point_of
from ..plan.migrate import migrate
from ..plan.storage import StorageSpec
from ..results.manifest import Manifest
from ..results.records import CellRecord
from .batch import compare_many
from .findings import METRICS
from .metric_values import GETTERS
from .stats import HIGHER, LOWER, decide

#: Workload fields that make two access specs the same workload.
WORKLOAD_FIELDS = ("block_size", "read_pct", "random_pct", "oio", "rate_iops", "arrivals", "bursts", "think_time",
                   "think_every", "hot_zones", "skew", "replay")
_BASE_FIELDS = WORKLOAD_FIELDS[:5]
#: The shape fields' values that mean "not shaped" (shown only when a workload has another).
_SHAPE_DEFAULTS = {"arrivals": "uniform", "think_every": 1}
#: Provenance fields shown as "what differs between the environments".
ENVIRONMENT_FIELDS = ("kernel", "fio_version", "protolab", "cpu_model", "cpus", "hostname", "machine", "python")


@dataclass(frozen=True)
class Difference:
    """One way in which run B differs from run A."""

    what: str  # "workloads", "load points", "configurations", "method", "environment"
    a: str
    b: str
    blocking: bool  # workloads and load points: refused unless forced

    def text(self) -> str:
        """'load points (A: …; B: …)'."""
        return f"{self.what} (A: {self.a}; B: {self.b})"


def plan_data(manifest: Manifest) -> dict[str, Any]:
    """The stored plan as data, in today's plan format ({} when none is stored)."""
    return migrate(manifest.plan, manifest.plan_format) if manifest.plan is not None else {}


def _workloads(plan: dict[str, Any], records: list[CellRecord]) -> dict[str, str]:
    specs = {w.get("name"): w for w in plan.get("workloads") or [] if isinstance(w, dict)}
    names = list(dict.fromkeys(r.workload for r in records)) or list(specs)
    return {n: ", ".join(f"{f}={specs[n].get(f)}" for f in WORKLOAD_FIELDS
                         if f in _BASE_FIELDS or specs[n].get(f, _SHAPE_DEFAULTS.get(f)) != _SHAPE_DEFAULTS.get(f))
            if n in specs else "" for n in names}


def _load_points(records: list[CellRecord]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in sorted(records, key=point_of):
        labels = out.setdefault(r.workload, [])
        if point_of(r).label not in labels:
            labels.append(point_of(r).label)
    return out


def _fmt_points(points: dict[str, list[str]], workloads: Iterable[str]) -> str:
    return "; ".join(f"{w}: {', '.join(points.get(w, [])) or 'none'}" for w in workloads)


def device_model(plan: dict[str, Any]) -> str:
    """The lab pool's device model in words ('hdd-array: 5.5ms±1.5ms ×70, …'); '' without the embedded lab."""
    lab = plan.get("lab")
    if not isinstance(lab, dict):
        return ""
    try:
        spec = StorageSpec.model_validate(lab.get("storage") or {})
    except ValueError:
        return "unreadable"
    return f"{spec.name}: {spec.summary()}"


def differences(manifest_a: Manifest, records_a: list[CellRecord],
                manifest_b: Manifest, records_b: list[CellRecord]) -> list[Difference]:
    """Everything that differs between two runs, blocking differences (workloads, load points) first."""
    out: list[Difference] = []
    plan_a, plan_b = plan_data(manifest_a), plan_data(manifest_b)
    wa, wb = _workloads(plan_a, records_a), _workloads(plan_b, records_b)
    if list(wa) != list(wb) and set(wa) != set(wb):
        out.append(Difference("workloads", ", ".join(wa) or "none", ", ".join(wb) or "none", True))
    for name in (n for n in wa if n in wb and wa[n] and wb[n] and wa[n] != wb[n]):
        out.append(Difference(f"workload {name}", wa[name], wb[name], True))
    pa, pb = _load_points(records_a), _load_points(records_b)
    common = [w for w in wa if w in wb]
    if any(pa.get(w) != pb.get(w) for w in common):
        changed = [w for w in common if pa.get(w) != pb.get(w)]
        out.append(Difference("load points", _fmt_points(pa, changed), _fmt_points(pb, changed), True))
    ca = list(dict.fromkeys(r.configuration for r in records_a))
    cb = list(dict.fromkeys(r.configuration for r in records_b))
    if set(ca) != set(cb):
        out.append(Difference("configurations", ", ".join(ca), ", ".join(cb), False))
    ma, mb = plan_a.get("method") or {}, plan_b.get("method") or {}
    for f in sorted(set(ma) | set(mb)):
        if ma.get(f) != mb.get(f):
            out.append(Difference(f"method {f}", str(ma.get(f)), str(mb.get(f)), False))
    da, db = device_model(plan_a), device_model(plan_b)
    if da != db:
        out.append(Difference("lab device model", da, db, False))
    env_a, env_b = manifest_a.provenance, manifest_b.provenance
    for f in ENVIRONMENT_FIELDS:
        va, vb = getattr(env_a, f, None), getattr(env_b, f, None)
        if va != vb:
            out.append(Difference(f"environment {f}", str(va), str(vb), False))
    return out


def check_comparable(diffs: list[Difference], force: bool, name_a: str = "A", name_b: str = "B") -> None:
    """ProtolabError naming what differs when a blocking difference exists and `force` is not set."""
    blocking = [d for d in diffs if d.blocking]
    if blocking and not force:
        raise ProtolabError(f"compare {name_a} {name_b}: runs differ in " + "; ".join(d.text() for d in blocking)
                            + "; pass --force to compare the cells they share anyway")


@dataclass(frozen=True)
class CompareRow:
    """One cell of the comparison: B relative to A (A = 100) for one metric."""

    workload: str
    load_label: str
    configuration: str
    metric: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    relative: float  # 100 × ratio of medians
    ci_low: float  # % of A
    ci_high: float
    p_value: float
    p_adjusted: float
    verdict: str  # "higher", "lower", "no clear difference"
    #: "no clear difference" only: the smallest change (%) the test could have called (analysis.detectable)
    mdd_pct: float = math.nan

    @property
    def significant(self) -> bool:
        """True when the difference is called (corrected test and interval outside the noise band)."""
        return self.verdict in (HIGHER, LOWER)


Cell = tuple[str, str, str]  # workload, load label, configuration


def _samples(records: list[CellRecord], metric: str) -> dict[Cell, list[float]]:
    get = GETTERS[metric]
    out: dict[Cell, list[float]] = {}
    for r in records:
        v = get(r)
        slot = out.setdefault((r.workload, point_of(r).label, r.configuration), [])
        if v is not None:
            slot.append(v)
    return out


Samples = dict[str, dict[Cell, list[float]]]  # metric → cell → one value per repeat


def samples_of(records: list[CellRecord], metrics: Iterable[str] | None = None) -> Samples:
    """Each metric's values per cell (workload, load label, configuration), one per repeat, as compare tests them."""
    return {m: _samples(records, m) for m in (list(metrics) if metrics is not None else list(METRICS))}


def compare_samples(sa: Samples, sb: Samples, *, alpha: float = 0.05, noise: float = 0.02,
                    method: str = "holm") -> list[CompareRow]:
    """B / A with a 95 % CI and a corrected call for every cell with values on both sides, per metric of ``sa``
    (one correction family per metric over its matched cells), in ``sa``'s order of metrics and cells."""
    out: list[CompareRow] = []
    for m, cells_a in sa.items():
        cells_b = sb.get(m, {})
        cells = [c for c in cells_a if c in cells_b and cells_a[c] and cells_b[c]]
        if not cells:
            continue
        comps = compare_many([(cells_a[c], cells_b[c]) for c in cells], labels=[" ".join(c) for c in cells])
        for c, comp, v in zip(cells, comps, decide(comps, alpha=alpha, noise=noise, method=method)):
            out.append(CompareRow(c[0], c[1], c[2], m, comp.n_base, comp.n_other, median(cells_a[c]),
                                  median(cells_b[c]), 100 * comp.ratio, 100 * comp.ci_low, 100 * comp.ci_high,
                                  comp.p_value, v.p_adjusted, v.verdict, 100 * v.detectable))
    return out


def compare_runs(records_a: list[CellRecord], records_b: list[CellRecord], metrics: Iterable[str] | None = None,
                 *, alpha: float = 0.05, noise: float = 0.02, method: str = "holm") -> list[CompareRow]:
    """Every cell present in both runs, per metric measured in both: B / A with a 95 % CI and a corrected call.

    One correction family per metric over all matched cells. Ordered as run A measured them.
    """
    wanted = list(metrics) if metrics is not None else list(METRICS)
    out = compare_samples(samples_of(records_a, wanted), samples_of(records_b, wanted), alpha=alpha, noise=noise,
                          method=method)
    wl = {w: i for i, w in enumerate(dict.fromkeys(r.workload for r in records_a))}
    cf = {c: i for i, c in enumerate(dict.fromkeys(r.configuration for r in records_a))}
    li = {(r.workload, point_of(r).label): point_of(r).order for r in records_a}
    metric_order = {m: i for i, m in enumerate(wanted)}
    far = 1 << 30
    last = ((chr(0x10FFFF), (far,)),)
    return sorted(out, key=lambda r: (wl.get(r.workload, far), li.get((r.workload, r.load_label), last),
                                      cf.get(r.configuration, far), metric_order[r.metric]))


def unmatched(records_a: list[CellRecord], records_b: list[CellRecord]) -> tuple[list[Cell], list[Cell]]:
    """Cells only in A, and cells only in B (left out of a forced comparison)."""
    ka = list(dict.fromkeys((r.workload, point_of(r).label, r.configuration) for r in records_a))
    kb = list(dict.fromkeys((r.workload, point_of(r).label, r.configuration) for r in records_b))
    return [k for k in ka if k not in kb], [k for k in kb if k not in ka]
