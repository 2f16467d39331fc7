"""The order of work: which (cell, repeat) to measure next, and why — fixed or adaptive repeats.

Fixed repeats: the plan's expansion, less the pairs already stored (resume). Adaptive
repeats (`method.repeats = { min, max, until_… }`): at each workload and load point,
first the missing pairs of the first `min` repeats, configurations interleaved
(A B C A B C …); then rounds in which every configuration whose IOPS are not yet as
tight as asked gets one more repeat, interleaved the same way (A C A C …), until none
needs one or `max` is reached. The decision reads the stored records each time, so a
resumed run carries on where the stopped one was, with nothing measured twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..analysis.repeat_rule import next_repeat
from ..plan.expand import Cell, expand, outer_steps
from ..plan.model import Plan
from ..plan.repeats import AdaptiveRepeats
from ..plan.stages import Step
from ..results.records import CellRecord
from .search import searched


@dataclass(frozen=True)
class Planned:
    """A (cell, repeat) to measure and why."""

    cell: Cell
    reason: str


Stored = Callable[[], list[CellRecord]]  # the records that count, as stored right now


def pending(plan: Plan, records: list[CellRecord]) -> list[Cell]:
    """The planned cells without a good record, in run order. An aging sequence with any step missing is
    measured again whole, from age 0: its data does not outlive the session (the lab's pool is made anew),
    so its next step would not be the age it says. The earlier session's steps stay as superseded records."""
    done = {r.cell_id for r in records if not r.failed}
    cells = expand(plan)
    broken = {c.sequence for c in cells if c.in_sequence and c.id not in done}
    return [c for c in cells if c.id not in done or (c.in_sequence and c.sequence in broken)]


def schedule(plan: Plan, stored: Stored, stops: dict[str, str] | None = None) -> Iterator[Planned]:
    """Every pair still to measure, in run order; ``stops`` collects why each cell's repeating ended."""
    rule = plan.method.repeats
    cells = pending(plan, stored())
    if not isinstance(rule, AdaptiveRepeats):
        yield from (Planned(c, f"repeat {c.repeat} of {rule}") for c in cells)
        yield from (Planned(c, why) for c, why in searched(plan, stored))  # the capacity ladder's search, if any
        return
    stops = {} if stops is None else stops
    for steps in outer_steps(plan):  # adaptive repeats and aging do not go together (plan.model)
        for workload in plan.workloads:
            for li, lp in enumerate(plan.load_points):
                group = [c for c in cells if c.workload.name == workload.name and c.load_index == li
                         and c.steps == steps]
                yield from (Planned(c, f"repeat {c.repeat} of at least {rule.min}") for c in group)
                while True:
                    values = _iops(stored(), workload.name, li, steps)
                    extra = []
                    for config in plan.configurations:
                        d = next_repeat(values.get(config.name, []), minimum=rule.min, maximum=rule.max,
                                        ci_pct=rule.until_ci_pct, agree_pct=rule.until_agree_pct)
                        key = Cell(config, workload, lp, li, 1, steps).key
                        if d.more:
                            n = len(values.get(config.name, []))
                            extra.append(Planned(Cell(config, workload, lp, li, n + 1, steps), d.reason))
                            stops.pop(key, None)
                        else:
                            stops[key] = d.reason
                    if not extra:
                        break
                    yield from extra


def _iops(records: list[CellRecord], workload: str, load: int,
          steps: tuple[Step, ...] = ()) -> dict[str, list[float]]:
    """IOPS of the stored ok windows at one workload, load point and outer steps (a swept value, a fill level),
    per configuration, by repeat."""
    dims: dict[str, str | int] = {}
    for s in steps:
        dims |= s.coords()
    out: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        if r.workload == workload and r.load_index == load and not r.failed and r.dimensions == dims:
            out.setdefault(r.configuration, []).append((r.repeat, r.result.iops))
    return {k: [v for _, v in sorted(pairs)] for k, pairs in out.items()}
