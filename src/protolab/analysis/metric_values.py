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
    read = reader([key])  # one place reads a metric by its source
    return lambda r: read(r)[0]


class _Getters(dict):
    """Every metric's getter, by key, made on first use (a metric registered later has one too)."""

    def __missing__(self, key: str) -> Getter:
        got = self[key] = getter(key)
        return got


GETTERS: dict[str, Getter] = _Getters()


def value(r: CellRecord, key: str) -> float | None:
    """Metric ``key`` of record ``r``."""
    return GETTERS[key](r)


def reader(keys: list[str]) -> Callable[[CellRecord], list[float | None]]:
    """A function giving metrics ``keys`` of a record, in that order (as GETTERS would, with the record's derived
    figures looked up once: a study's tables read every metric of every record)."""
    plan = [(METRICS[k].source, METRICS[k].field) for k in keys]

    def read(r: CellRecord) -> list[float | None]:
        res, f, out = r.result, None, []
        for source, name in plan:
            if source == "result":
                out.append(getattr(res, name))
            elif source == "percentile":
                out.append(res.percentiles_us.get(name))
            else:
                if f is None:
                    f = figures(r)
                out.append(_number(getattr(f, name)))
        return out

    return read

