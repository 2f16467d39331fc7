"""How each registered metric (protolab.metrics) is read from a record: by its source, never by its name."""

from __future__ import annotations

import math
from typing import Any, Callable

from ..metrics import METRICS
from ..results.records import CellRecord
from .derived import figures

Getter = Callable[[CellRecord], float | None]


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def getter(key: str) -> Getter:
    """The function that reads metric ``key`` from a record (None where the record has no value)."""
    m = METRICS[key]
    if m.source == "result":
        return lambda r: getattr(r.result, m.field)
    if m.source == "percentile":
        return lambda r: r.result.percentiles_us.get(m.field)
    return lambda r: _number(getattr(figures(r), m.field))


class _Getters(dict):
    """Every metric's getter, by key, made on first use (a metric registered later has one too)."""

    def __missing__(self, key: str) -> Getter:
        got = self[key] = getter(key)
        return got


GETTERS: dict[str, Getter] = _Getters()


def value(r: CellRecord, key: str) -> float | None:
    """Metric ``key`` of record ``r``."""
    return GETTERS[key](r)
