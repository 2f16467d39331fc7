"""Capacity under a latency objective (plan.rate_ladder): a configuration's open-loop rate ladder, where its latency
leaves its floor (the knee), the highest offered rate that meets the objective and its interval over repeats, and
the next step of the bounded search. Pure: records in, figures out; every threshold is the run's own data or the
plan's objective.

- A step **keeps up** when the I/Os it completed are not fewer than the offered rate gives over its windows, less
  the one-sided (1 − α) bound of a Poisson count (sd √expected), or when its achieved share of the offered rate is
  not below the lowest share of the ladder's lowest step (the harness's own shortfall on this machine: fio wakes
  late on a busy one): below both, the storage (or the load point's outstanding I/Os) did not carry the offered
  load.
- A step **meets the objective** at a repeat when it kept up there and that window's latency percentile (fio's
  histogram, merged over the window) is at most the objective.
- **The capacity** of one repeat is the highest step that meets the objective with every lower step meeting it too
  (a noisy pass above a failure is no capacity); the capacity is the median over repeats with the order-statistics
  interval of that median (analysis.stats.summarise: min–max below 6 repeats, its coverage said). A repeat where
  even the lowest step fails counts 0 (below the ladder); where every step passes, the top (censored: "at least").
  The next step above the capacity is not reached (met with every lower step) in at least half of the repeats.
- **The knee** is the lowest step from which every higher step's mean latency lies above the floor's: the
  interval of the lowest step's mean latency over its repeats (the same order-statistics interval; 3 repeats:
  every repeat above every floor repeat, a one-sided rank test at p = 0.05). It is stated at the step's achieved
  IOPS (the x of latency against IOPS) with the offered rate.
- **The search**: between the step at the capacity and the next step above it, the midpoint (whole IOPS), as long
  as the configuration has had fewer than ``refine`` such extra steps and the gap holds a new rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist, median

from ..plan.coordinates import load_label, point_of, value_label
from ..results.records import CellRecord


@dataclass(frozen=True)
class Step:
    """One offered rate of one ladder, its repeats in repeat order."""

    offered: int
    repeats: tuple[int, ...]
    achieved: tuple[float, ...]  # IOPS per repeat
    latency_us: tuple[float, ...]  # mean latency per repeat
    objective_us: tuple[float | None, ...]  # the objective's percentile per repeat
    ios: tuple[int, ...]
    seconds: tuple[float, ...]
    refined: bool = False  # added by the search, not in the plan's ladder


def kept_up(offered: float, ios: int, seconds: float, alpha: float, floor_share: float = math.inf) -> bool:
    """Whether ``ios`` in ``seconds`` carried ``offered`` IOPS (see the module's text; ``floor_share``: the lowest
    achieved share of the offered rate at the ladder's lowest step)."""
    if seconds <= 0:
        return False
    expected = offered * seconds
    return ios >= expected - NormalDist().inv_cdf(1 - alpha) * math.sqrt(expected) or ios / expected >= floor_share


def floor_share(steps: Sequence[Step]) -> float:
    """The lowest achieved share of the offered rate among the lowest step's repeats (inf without steps)."""
    if not steps or not steps[0].seconds:
        return math.inf
    s = steps[0]
    return min(i / (s.offered * t) if t > 0 else math.inf for i, t in zip(s.ios, s.seconds))


def meets(step: Step, limit_us: float, alpha: float, repeat: int, floor: float = math.inf) -> bool:
    """Whether ``step`` meets the objective at the repeat of index ``repeat`` (``floor``: `floor_share` of its
    ladder)."""
    p = step.objective_us[repeat]
    return p is not None and p <= limit_us and kept_up(step.offered, step.ios[repeat], step.seconds[repeat], alpha,
                                                       floor)


def _highest(passes: Sequence[bool]) -> int | None:
    """The index of the last step of the run of passes from the bottom (None: the lowest fails)."""
    last = None
    for i, ok in enumerate(passes):
        if not ok:
            break
        last = i
    return last


@dataclass(frozen=True)
class Knee:
    """Where latency leaves its floor."""

    offered: int
    achieved: float  # the knee step's median achieved IOPS
    below: int | None  # the offered rate of the step under it (still on the floor)
    floor_us: tuple[float, float]  # the floor's interval of the mean latency
    at_us: tuple[float, float]  # the knee step's


def knee(steps: Sequence[Step]) -> Knee | None:
    """The knee of a ladder (steps ascending), None when latency never leaves its floor or a step has fewer than 3
    repeats (no interval)."""
    from .stats import summarise

    if len(steps) < 2 or any(len(s.latency_us) < 3 for s in steps):
        return None
    sums = [summarise(s.latency_us) for s in steps]
    floor = sums[0]
    above = [s.ci_low > floor.ci_high for s in sums]
    k = None
    for i in range(len(steps) - 1, 0, -1):  # the lowest step from which every higher one is above the floor
        if not above[i]:
            break
        k = i
    if k is None:
        return None
    return Knee(steps[k].offered, median(steps[k].achieved), steps[k - 1].offered, (floor.ci_low, floor.ci_high),
                (sums[k].ci_low, sums[k].ci_high))


@dataclass(frozen=True)
class CapacityFigure:
    """The highest offered rate meeting the objective: the median over repeats and its interval."""

    value: float
    low: float  # NaN with fewer than 3 repeats
    high: float
    coverage: float  # the interval's coverage (below 0.95 under 6 repeats)
    per_repeat: tuple[float, ...]
    next_step: int | None  # the offered rate of the step above the capacity (None: the capacity is the top step)
    above: bool  # the median repeat met the objective at every step: the capacity is at least the top
    below: bool  # the median repeat failed at the lowest step: the capacity is below the ladder


def capacity(steps: Sequence[Step], limit_us: float, alpha: float) -> CapacityFigure | None:
    """The capacity of a ladder (steps ascending, each with the same repeats), None without steps."""
    from .stats import summarise

    if not steps:
        return None
    n, floor = min(len(s.objective_us) for s in steps), floor_share(steps)
    per = []
    for r in range(n):
        top = _highest([meets(s, limit_us, alpha, r, floor) for s in steps])
        per.append(0.0 if top is None else float(steps[top].offered))
    sm = summarise(per)
    after = next((s.offered for s in steps if s.offered > sm.median), None)
    return CapacityFigure(sm.median, sm.ci_low, sm.ci_high, sm.ci_level, tuple(per), after,
                          above=after is None, below=sm.median < steps[0].offered)


def next_rate(steps: Sequence[Step], limit_us: float, alpha: float, refine: int) -> int | None:
    """The search's next offered rate for a ladder (steps ascending), or None when it is done."""
    c = capacity(steps, limit_us, alpha)
    if sum(s.refined for s in steps) >= refine or c is None or c.below or c.next_step is None:
        return None  # done, below the ladder, or every step met it: no gap to bisect
    lo, hi = max(s.offered for s in steps if s.offered <= c.value), c.next_step
    mid = (lo + hi) // 2
    return mid if lo < mid < hi else None


@dataclass(frozen=True)
class Ladder:
    """One configuration's rate ladder at one workload and point (the load point and any other coordinate)."""

    workload: str
    configuration: str
    outer: tuple[tuple[str, object], ...]  # the point's coordinates but the rate (a load point's index included)
    label: str  # 'fill 25 % · 1×4×64=256', without the rate
    steps: tuple[Step, ...]
    knee: Knee | None = None
    capacity: CapacityFigure | None = None
    next_rate: int | None = None
    notes: list[str] = field(default_factory=list)


def _group(records: Iterable[CellRecord]) -> dict[tuple, list[CellRecord]]:
    out: dict[tuple, list[CellRecord]] = {}
    for r in records:
        if r.failed or "rate" not in r.coords:
            continue
        outer = tuple((k, v) for k, v in point_of(r).coords if k != "rate")
        out.setdefault((r.workload, outer, r.configuration), []).append(r)
    return out


def _step(offered: int, recs: list[CellRecord], percentile_key: str, refined: bool) -> Step:
    recs = sorted(recs, key=lambda r: r.repeat)
    return Step(offered, tuple(r.repeat for r in recs), tuple(r.result.iops for r in recs),
                tuple(r.result.lat_mean_us or 0.0 for r in recs),
                tuple(r.result.percentiles_us.get(percentile_key) for r in recs),
                tuple(r.result.read.ios + r.result.write.ios for r in recs),
                tuple(r.result.runtime_s for r in recs), refined)


def ladders(records: Iterable[CellRecord], *, ladder: Sequence[int], percentile_key: str, limit_us: float,
            refine: int, alpha: float = 0.05, repeats: int | None = None) -> list[Ladder]:
    """Every ladder of ``records`` with its knee, capacity and next search step. ``repeats``: the repeats a step
    needs before it counts (a step still being measured is left out); None: whatever it has."""
    out = []
    for (workload, outer, config), recs in _group(records).items():
        by: dict[int, list[CellRecord]] = {}
        for r in recs:
            by.setdefault(int(r.coords["rate"]), []).append(r)
        whole = {k: v for k, v in by.items() if repeats is None or len({r.repeat for r in v}) >= repeats}
        steps = tuple(_step(k, whole[k], percentile_key, k not in ladder) for k in sorted(whole))
        first = recs[0]
        label = " · ".join([*(value_label(k, v) for k, v in outer if k != "load"),
                            load_label(first.hosts, first.streams_per_host, first.oio_per_stream, first.total_oio)])
        out.append(Ladder(workload, config, outer, label, steps, knee(steps), capacity(steps, limit_us, alpha),
                          next_rate(steps, limit_us, alpha, refine)))
    return sorted(out, key=lambda g: (g.workload, str(g.outer), g.configuration))
