"""A plan's matrix in one line, as `protolab validate` prints it."""

from __future__ import annotations

from typing import Any


def matrix_line(p: Any, cells: int) -> str:
    """'3 configurations × 1 workloads × 2 load points × 3 repeats = 18 cells, about 1.2 min of measurement'."""
    m = p.method
    return (f"{len(p.configurations)} configurations × {len(p.workloads)} workloads × {len(p.load_points)} load "
            f"points × {_repeats(m)}{f' × {len(p.fill.levels)} fill levels' if p.fill is not None else ''}"
            f"{_aging(p)} = {_cells(m, cells)}, about {_minutes(m, cells, p.seconds_per_cell)} min of measurement"
            f"{f'; {p.fill.summary()}' if p.fill is not None else ''}")


def _aging(p) -> str:
    """' × 3 aging steps (aged 30s, measured every 10s)', or nothing."""
    age = p.stage.age if p.stage is not None else None
    return f" × {age.steps} aging steps ({age.summary()})" if age is not None else ""


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
