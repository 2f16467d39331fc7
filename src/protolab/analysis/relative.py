"""Relative-to-baseline tables: each configuration as a percentage of the baseline at the same
workload and load point (baseline = 100), from the median of the repeats."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Iterable

from ..plan.coordinates import Point, point_of
from ..results.records import CellRecord
from .metric_values import reader

#: The metrics a relative table shows by default (every registered metric can be asked for).
METRICS = ("iops", "mbps", "lat_mean_us", "lat_p99_us")


@dataclass(frozen=True)
class Row:
    """One configuration at one workload and load point."""

    workload: str
    point: Point  # where it is compared: the load point and any other point coordinate (plan.coordinates)
    configuration: str
    baseline: bool
    repeats: int
    values: dict[str, float | None] = field(default_factory=dict)  # metric → median
    samples: dict[str, list[float]] = field(default_factory=dict)  # metric → one value per repeat
    relative: dict[str, float | None] = field(default_factory=dict)  # metric → % of baseline


    @property
    def load_label(self) -> str:
        """'1×4×4=16' (hosts × streams per host × OIO per stream = outstanding I/Os in all), after the point's
        other coordinates when it has any: 'fill 25 % · 1×4×4=16'."""
        return self.point.label


def relative_rows(records: Iterable[CellRecord], baseline: str, metrics: Iterable[str] = METRICS) -> list[Row]:
    """Median per (workload, load point, configuration) and its percentage of the baseline's median."""
    metrics = list(metrics)
    groups: dict[tuple[str, Point, str], list[CellRecord]] = {}
    order: list[tuple[str, Point, str]] = []
    for r in records:
        key = (r.workload, point_of(r), r.configuration)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(r)
    medians: dict[tuple[str, Point, str], dict[str, float | None]] = {}
    samples: dict[tuple[str, Point, str], dict[str, list[float]]] = {}
    read = reader(metrics)
    for key, recs in groups.items():
        columns = zip(*map(read, recs))  # per metric, one value per repeat
        samples[key] = got = {m: [v for v in col if v is not None] for m, col in zip(metrics, columns)}
        medians[key] = {m: median(vals) if vals else None for m, vals in got.items()}
    rows = []
    for key in sorted(order, key=lambda k: (k[0], k[1].order)):
        w, point, c = key
        base = medians.get((w, point, baseline), {})
        rel = {}
        for m in metrics:
            b, v = base.get(m), medians[key][m]
            rel[m] = 100.0 * v / b if (b and v is not None) else None
        rows.append(Row(w, point, c, c == baseline, len(groups[key]),
                        medians[key], samples[key], rel))
    return rows
