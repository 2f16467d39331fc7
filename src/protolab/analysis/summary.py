"""The summary matrix: per workload, configurations (rows, baseline first) × compared metrics (columns), and what
held each configuration back (the last column). The whole picture before the sentences.

A cell sums up one configuration and metric over the workload's load points:
- its value is the median over load points of the % of the baseline, its interval spans the load points' intervals;
- ``higher``/``lower`` (an arrow, coloured): the difference was called at every load point, in that direction;
- ``mixed``: called at some load points (or in both directions);
- ``same`` ("≈"): tested at every load point and called at none — with the smallest difference this run could
  have detected (analysis.detectable), the largest over the load points;
- ``not tested`` ("n.t."): not called anywhere and not tested at one load point or more (too few repeats, no
  baseline value), with why;
- ``baseline``: the baseline's own value (median over load points of the medians, and their range);
- ``absolute``: the baseline has no value, or only zero (a local device has no server CPU, no packets): its own
  value, as the baseline's row gives its own, absolute and with its unit, not a % of anything;
- ``none``: no value.
A column with no value in any row is left out. Pure: built from the relative rows, the verdicts and the
bottlenecks (report.tables builds them); report.sections.summary_section renders it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from ..metrics import METRICS
from ..plan.coordinates import Point
from .bottleneck_words import held_by, short_cause
from .relative import Row
from .stats import HIGHER, LOWER, NO_CLEAR_DIFFERENCE, NOT_TESTED, Verdict

BASELINE, SAME, MIXED, UNTESTED, NONE = "baseline", "same", "mixed", "not tested", "none"
ABSOLUTE = "absolute"


@dataclass(frozen=True)
class PointCall:
    """One load point of a cell: its call and figures (% of baseline; the interval's ends; detectable %)."""

    load: str
    verdict: str  # higher, lower, no clear difference, not tested
    relative: float | None
    low: float | None = None
    high: float | None = None
    detectable: float | None = None  # "no clear difference" only
    alpha: float | None = None  # the α it was tested at, likewise
    why: str = ""  # "not tested": why


@dataclass(frozen=True)
class Cell:
    """One configuration × metric over the workload's load points (see the module text)."""

    state: str  # higher, lower, mixed, same, not tested, baseline, absolute, none
    value: float | None  # % of baseline (median over load points); baseline and absolute: its own median
    low: float | None = None  # the interval spanning the load points' (%); baseline, absolute: range over points
    high: float | None = None
    detectable: float | None = None  # "same": the largest smallest-detectable difference over the load points (%)
    why: str = ""  # "not tested": why; "mixed": where it was called
    better: bool | None = None  # called cells: whether the direction is the good one for the user
    points: tuple[PointCall, ...] = ()


@dataclass(frozen=True)
class MatrixRow:
    configuration: str
    baseline: bool
    cells: dict[str, Cell]
    bottleneck: str  # what held it back, in the findings' words, over its load points ('' when unknown)
    held: tuple[str, ...] = ()  # the same without figures, one per group of load points ('the wire', "tgtd's CPU")


@dataclass(frozen=True)
class Matrix:
    workload: str
    baseline: str
    metrics: list[str]  # the columns, in report order
    rows: list[MatrixRow]
    loads: list[str] = field(default_factory=list)  # the load points' labels


def _point_call(v: Verdict | None, r: Row | None, base: Row | None, metric: str) -> PointCall:
    rel = r.relative.get(metric) if r is not None else None
    load = r.load_label if r is not None else ""
    if v is None:
        has_base = base is not None and base.values.get(metric) is not None
        return PointCall(load, NOT_TESTED, rel, why="no test" if has_base else "the baseline has no value")
    ok = v.verdict != NOT_TESTED and math.isfinite(v.ci_low) and math.isfinite(v.ci_high)
    return PointCall(load, v.verdict, rel, 100 * v.ci_low if ok else None, 100 * v.ci_high if ok else None,
                     100 * v.detectable if math.isfinite(v.detectable) else None,
                     v.alpha_tested if math.isfinite(v.alpha_tested) else None,
                     v.reason.removeprefix("not tested").strip(" ()") if v.verdict == NOT_TESTED else "")


def _where(calls: list[PointCall], total: int) -> str:
    if len(calls) == total:
        return "at every load point"
    return f"at {len(calls)} of {total} load points ({', '.join(c.load for c in calls)})"


def cell(metric: str, calls: list[PointCall], measured: bool = False, own: list[float] | None = None) -> Cell:
    """A non-baseline cell from its load points' calls (see the module text); ``measured``: the configuration has
    values of its own (so no % of the baseline means the baseline has none, or zero); ``own``: those values, shown
    absolute when the baseline has none."""
    rels = [c.relative for c in calls if c.relative is not None]
    if not rels:
        if own:
            return _own_cell(ABSOLUTE, own, calls)
        if measured:
            return Cell(UNTESTED, None, why="the baseline has no value (or zero) to compare with", points=tuple(calls))
        return Cell(NONE, None, points=tuple(calls))
    value = median(rels)
    lows = [c.low for c in calls if c.low is not None]
    highs = [c.high for c in calls if c.high is not None]
    low, high = (min(lows), max(highs)) if lows and highs else (None, None)
    up = [c for c in calls if c.verdict == HIGHER]
    down = [c for c in calls if c.verdict == LOWER]
    untested = [c for c in calls if c.verdict == NOT_TESTED]
    n = len(calls)
    if up or down:
        if len(up) == n or len(down) == n:
            state = HIGHER if up else LOWER
            return Cell(state, value, low, high, better=(state == METRICS[metric].better), points=tuple(calls))
        parts = [f"{word} {_where(cs, n)}" for word, cs in (("higher", up), ("lower", down)) if cs]
        quiet = [c for c in calls if c.verdict == NO_CLEAR_DIFFERENCE]
        parts += [f"no clear difference {_where(quiet, n)}"] if quiet else []
        parts += [f"not tested {_where(untested, n)}"] if untested else []
        return Cell(MIXED, value, low, high, why="; ".join(parts), points=tuple(calls))
    if not untested:
        seen = [c.detectable for c in calls if c.detectable is not None]
        return Cell(SAME, value, low, high, max(seen) if seen else None, points=tuple(calls))
    whys = list(dict.fromkeys(c.why for c in untested if c.why))
    why = "; ".join(whys) + ("" if len(untested) == n else f" ({_where(untested, n)}; no clear difference at the "
                             "others)")
    return Cell(UNTESTED, value, why=why, points=tuple(calls))


def _own_cell(state: str, vals: list[float], calls: list[PointCall] | None = None) -> Cell:
    """A row's own values: their median over load points and, when they differ, their range."""
    spread = min(vals) != max(vals)
    return Cell(state, median(vals), min(vals) if spread else None, max(vals) if spread else None,
                points=tuple(calls or ()))


def _own(metric: str, rows: list[Row]) -> list[float]:
    return [v for r in rows if (v := r.values.get(metric)) is not None]


def _baseline_cell(metric: str, rows: list[Row]) -> Cell:
    vals = _own(metric, rows)
    return _own_cell(BASELINE, vals) if vals else Cell(NONE, None)


def _bottleneck(found: dict[tuple[str, Point, str], Any], workload: str, configuration: str,
                loads: dict[Point, str]) -> tuple[str, tuple[str, ...]]:
    mine = sorted((p, b) for (w, p, c), b in found.items() if w == workload and c == configuration)
    if not mine:
        return "", ()
    groups: dict[str, list[tuple[Point, Any]]] = {}
    for p, b in mine:  # by what held it (the figures as ranges), not by every detail the findings tell apart
        groups.setdefault(held_by(b), []).append((p, b))
    if len(groups) == 1:
        [g] = groups.values()
        return short_cause([b for _, b in g]), (held_by(g[0][1]),)
    parts = [f"{short_cause([b for _, b in g])} at {', '.join(loads.get(p, str(p)) for p, _ in g)}"
             for g in groups.values()]
    return "; ".join(parts), tuple(dict.fromkeys(held_by(g[0][1]) for g in groups.values()))


def matrix(workload: str, rows: list[Row], verdicts: dict, bottlenecks: dict, baseline: str,
           configurations: list[str], metrics: list[str]) -> Matrix:
    """The workload's matrix from the relative rows, the verdicts ((metric, workload, point, configuration) →
    Verdict), the bottlenecks ((workload, point, configuration) → Bottleneck) and the compared metrics."""
    mine = [r for r in rows if r.workload == workload]
    points = sorted({r.point for r in mine})
    loads = {r.point: r.load_label for r in mine}
    by = {(r.configuration, r.point): r for r in mine}
    present = [c for c in configurations if any((c, p) in by for p in points)]
    present += [c for c in dict.fromkeys(r.configuration for r in mine) if c not in present]
    order = [baseline] * (baseline in present) + [c for c in present if c != baseline]
    cols = [m for m in metrics if any(r.values.get(m) is not None for r in mine)]
    out = []
    for c in order:
        cells = {}
        for m in cols:
            if c == baseline:
                cells[m] = _baseline_cell(m, [by[(c, p)] for p in points if (c, p) in by])
                continue
            calls = [_point_call(verdicts.get((m, workload, p, c)), by[(c, p)], by.get((baseline, p)), m)
                     for p in points if (c, p) in by]
            base_has = any(_own(m, [by[(baseline, p)] for p in points if (baseline, p) in by]))  # 0 is none too
            own = _own(m, [by[(c, p)] for p in points if (c, p) in by])
            cells[m] = cell(m, calls, bool(own), None if base_has else own)
        words, held = _bottleneck(bottlenecks, workload, c, loads)
        out.append(MatrixRow(c, c == baseline, cells, words, held))
    return Matrix(workload, baseline, cols, out, [loads[p] for p in points])


def matrices(workloads: list[str], rows: list[Row], verdicts: dict, bottlenecks: dict, baseline: str,
             configurations: list[str], metrics: list[str]) -> list[Matrix]:
    """One `matrix` per workload, in report order."""
    return [matrix(w, rows, verdicts, bottlenecks, baseline, configurations, metrics) for w in workloads]


def compare_matrices(rows: list[Any], reference: str) -> list[Matrix]:
    """`protolab compare`'s matrices (analysis.compare's CompareRows: run B's % of run A, A = 100): per workload, a
    configuration per row and a metric per column, each cell summing up its load points as the report's cells do;
    no baseline row (run A, ``reference``, is the reference of every row) and no bottleneck column."""
    out = []
    for w in dict.fromkeys(r.workload for r in rows):
        mine = [r for r in rows if r.workload == w]
        metrics = [m for m in METRICS if any(r.metric == m for r in mine)]
        loads = list(dict.fromkeys(r.load_label for r in mine))
        mrows = []
        for c in dict.fromkeys(r.configuration for r in mine):
            cells = {}
            for m in metrics:
                calls = [PointCall(r.load_label, r.verdict, r.relative, r.ci_low, r.ci_high)
                         for r in mine if r.configuration == c and r.metric == m]
                cells[m] = cell(m, calls, bool(calls)) if calls else Cell(NONE, None)
            mrows.append(MatrixRow(c, False, cells, ""))
        out.append(Matrix(w, reference, metrics, mrows, loads))
    return out
