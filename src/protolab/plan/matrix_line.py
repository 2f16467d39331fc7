"""A plan's matrix in one line, as `protolab validate` prints it."""

from __future__ import annotations

from typing import Any


def matrix_line(p: Any, cells: int) -> str:
    """'3 configurations × 1 workloads × 2 load points × 3 repeats = 18 cells, about 1.2 min of measurement'."""
    m = p.method
    return (f"{len(p.configurations)} configurations × {len(p.workloads)} workloads × {len(p.load_points)} load "
            f"points × {_repeats(m)}{f' × {len(p.fill.levels)} fill levels' if p.fill is not None else ''}"
            f"{_aging(p)}{_ladder(p)}{_faults(p)} = {_cells(m, cells)}{_search(p)}, about "
            f"{_minutes(m, cells, p.seconds_per_cell)} min of measurement"
            f"{f'; {p.fill.summary()}' if p.fill is not None else ''}")


def _aging(p) -> str:
    """' × 3 aging steps (aged 30s, measured every 10s)', or nothing."""
    age = p.stage.age if p.stage is not None else None
    return f" × {age.steps} aging steps ({age.summary()})" if age is not None else ""


def _ladder(p) -> str:
    """' × 3 offered rates' (plan.rate_ladder), or nothing."""
    cap = getattr(p, "capacity", None)
    return f" × {len(cap.ladder)} offered rates" if cap is not None else ""


def _faults(p) -> str:
    """' × 4 fault values (none and 3 faults)' (plan.faults), or nothing."""
    faults = getattr(p, "faults", None) or []
    return f" × {len(faults) + 1} fault values (none and {len(faults)} fault{'s' if len(faults) != 1 else ''})" \
        if faults else ""


def _search(p) -> str:
    """' (+ up to 6 by the search)': the capacity search's cells at most, or nothing."""
    cap = getattr(p, "capacity", None)
    if cap is None or not cap.refine:
        return ""
    extra = cap.refine * len(p.configurations) * len(p.workloads) * len(p.load_points) * p.method.min_repeats
    return f" (+ up to {extra} by the search)"


def _repeats(m) -> str:
    return f"{m.repeats} repeats" if isinstance(m.repeats, int) else m.repeats.summary()


def _cells(m, n: int) -> str:
    """'24 cells', or '24–120 cells' with adaptive repeats."""
    return f"{n} cells" if isinstance(m.repeats, int) else f"{n}–{n // m.min_repeats * m.max_repeats} cells"


def _minutes(m, n: int, seconds_per_cell: float) -> str:
    per = seconds_per_cell / 60
    if isinstance(m.repeats, int):
        return f"{n * per:.1f}"
    return f"{n * per:.1f}–{n // m.min_repeats * m.max_repeats * per:.1f}"
