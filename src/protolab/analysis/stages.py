"""Stage dimensions in the analysis: records at different fill levels (or ages) are different cells.

The analysis compares configurations at a (workload, load point); a stage step is folded
into the load point so that every table, test and chart keeps its steps apart: a record
at stage step *k* (in the steps' own order) and load point *l* is analysed at load index
``k × STRIDE + l`` and labelled 'fill 25 % · 1×4×4=16'. `unfold` gives both back.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..results.records import CellRecord

#: Load indexes of one stage step; far more load points than any plan can hold (plan.model.MAX_CELLS).
STRIDE = 1_000_000


def _folded(r: CellRecord) -> dict[str, Any]:
    """The record's dimensions that make a step of their own (fill levels); an aging step is not one: its
    sequence is one long measurement, read by report.longrun."""
    from ..plan.stages import STAGE_UNITS

    return {k: v for k, v in r.dimensions.items() if k in STAGE_UNITS}


def _step(r: CellRecord) -> tuple:
    return tuple(sorted(_folded(r).items()))


def _order(v: Any) -> tuple:
    return tuple((k, (0, x, "") if isinstance(x, (int, float)) else (1, 0, str(x))) for k, x in v)


def fold(records: Iterable[CellRecord]) -> list[CellRecord]:
    """``records`` with each stage step folded into the load index (records without one are unchanged)."""
    recs = list(records)
    steps = sorted({_step(r) for r in recs if _folded(r)}, key=_order)
    if not steps:
        return recs
    rank = {s: i for i, s in enumerate(steps)}
    return [r.model_copy(update={"coords": {**r.coords, "load": rank[_step(r)] * STRIDE + r.load_index}})
            if _folded(r) else r for r in recs]


def unfold(load_index: int) -> tuple[int, int]:
    """(stage step's rank, the plan's load index) of a folded load index."""
    return divmod(load_index, STRIDE)


def stage_prefix(r: CellRecord) -> str:
    """'fill 25 % · ' for a record at a stage step; '' otherwise."""
    if not _folded(r):
        return ""
    from ..plan.stages import stage_label

    return " · ".join(stage_label(k, v) for k, v in _folded(r).items()) + " · "
