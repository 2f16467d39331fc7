"""The capacity ladder's bounded search (plan.rate_ladder, analysis.capacity.next_rate): after the plan's ladder, rounds
in which every configuration whose capacity and next step leave a gap gets the midpoint, at every repeat,
configurations interleaved (A B A B … per repeat), until none needs one or each has had ``refine`` extra steps. Like
adaptive repeats (run.schedule), the decision reads the stored records each time: a resumed run carries on where the
stopped one was, a step whose repeats were cut short gets the missing ones, nothing is measured twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..analysis.capacity import Ladder, ladders
from ..plan.expand import Cell, outer_steps
from ..plan.model import Plan
from ..plan.stages import Step
from ..results.records import CellRecord

Stored = Callable[[], list[CellRecord]]


def _steps_at(plan: Plan, ladder: Ladder, rate: int) -> tuple[Step, ...] | None:
    """The outer steps of ``ladder``'s point with its rate step at ``rate`` (None: the plan has no such point)."""
    cap = plan.capacity
    assert cap is not None
    outer = dict(ladder.outer)
    for steps in outer_steps(plan):
        dims = {k: v for s in steps for k, v in s.coords().items() if k != "rate"}
        if all(outer.get(k) == v for k, v in dims.items()):
            return tuple(cap.step(rate) if s.dimension == "rate" else s for s in steps)
    return None


def searched(plan: Plan, stored: Stored, alpha: float = 0.05) -> Iterator[tuple[Cell, str]]:
    """Every search step still to measure and why, in run order, after the ladder (see the module's text)."""
    cap = plan.capacity
    if cap is None:
        return
    n = plan.method.min_repeats
    configs = {c.name: c for c in plan.configurations}
    workloads = {w.name: w for w in plan.workloads}
    while True:
        records = stored()
        done = {r.cell_id for r in records if not r.failed}
        groups: dict[tuple, list[tuple[Ladder, int]]] = {}
        for g in ladders(records, ladder=cap.ladder, percentile_key=cap.slo.key, limit_us=cap.slo.under_us,
                         refine=cap.refine, alpha=alpha, repeats=n):
            if g.next_rate is not None and g.configuration in configs and g.workload in workloads:
                groups.setdefault((g.workload, g.outer), []).append((g, g.next_rate))
        extra = []
        for (workload, outer), wanted in groups.items():
            li = int(dict(outer)["load"])
            for repeat in range(1, n + 1):
                for g, rate in sorted(wanted, key=lambda x: list(configs).index(x[0].configuration)):
                    steps = _steps_at(plan, g, rate)
                    if steps is None:
                        continue
                    cell = Cell(configs[g.configuration], workloads[workload], plan.load_points[li], li, repeat, steps)
                    if cell.id not in done:
                        extra.append((cell, f"search step {sum(s.refined for s in g.steps) + 1} of at most "
                                            f"{cap.refine}: {rate} IOPS, between the capacity under "
                                            f"{cap.slo.summary()} and the next step"))
        if not extra:
            return
        yield from extra
