"""The latency breakdown's rows (analysis.time_breakdown), computed once when the report's data is built; its
charts — per workload and point, a stacked horizontal bar per configuration (the baseline first): the mean
latency's parts — and its --json. report.sections.breakdown_section puts them in a table, analysis.breakdown_words
in sentences."""

from __future__ import annotations

import math
from typing import Any

from ..analysis.time_breakdown import COMPONENTS, BreakdownRow, rows
from .chart import Chart, Series
from .report_data import RunData, slug

NOTE = ("fio's mean latency split at the request→reply times captured at the load host's and the server's ports and "
        "the device model's queue + service time (a part two components share: one of them not measured)")


def breakdown_data(run: RunData, wired: dict[str, bool]) -> tuple[list[BreakdownRow], list[Chart]]:
    """The run's breakdown rows and charts; ([], []) when no record measured a level below fio's."""
    found = rows(run.records, wired)
    return found, charts(found, run.configurations, run.baseline)


def _order(name: str) -> tuple[int, int]:
    first = name.split(" + ")[0]
    return (COMPONENTS.index(first) if first in COMPONENTS else len(COMPONENTS), name.count(" + "))


def charts(found: list[BreakdownRow], configurations: list[str], baseline: str) -> list[Chart]:
    """Per workload and point: each configuration's parts as one stacked bar, the baseline's first."""
    groups: dict[tuple[str, Any], list[BreakdownRow]] = {}
    for r in found:
        groups.setdefault((r.workload, r.point), []).append(r)
    out = []
    for (workload, point), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        order = [baseline] + [c for c in configurations if c != baseline]
        group.sort(key=lambda r: order.index(r.configuration) if r.configuration in order else len(order))
        names = sorted({p.name for r in group for p in r.parts}, key=_order)
        series, table = [], []
        for name in names:
            got = [next((p for p in r.parts if p.name == name), None) for r in group]
            series.append(Series(name, [None if p is None else round(p.us.mean, 2) for p in got],
                                 [None if p is None or not p.tested else round(p.us.low, 2) for p in got],
                                 [None if p is None or not p.tested else round(p.us.high, 2) for p in got]))
        for r in group:
            table += [{"configuration": r.configuration, "part": p.name, "mean µs": round(p.us.mean, 2),
                       "CI low µs": None if not p.tested else round(p.us.low, 2),
                       "CI high µs": None if not p.tested else round(p.us.high, 2), "repeats": p.us.n,
                       "fio mean µs": round(r.lat_mean_us.mean, 2), "residual %": round(r.residual_pct, 2)}
                      for p in r.parts]
        out.append(Chart(id=slug("breakdown", workload, point.slug), kind="stacked", section="breakdown",
                         workload=workload, title=f"{workload} · {point.label}: where the mean latency goes",
                         note=NOTE, ylabel="", xlabel="µs per I/O (mean over the repeats that measured each part)",
                         x=[r.configuration for r in group], series=series, table=table))
    return out


def _est(e) -> dict[str, Any]:
    return {"mean": e.mean, "low": None if math.isnan(e.low) else e.low,
            "high": None if math.isnan(e.high) else e.high, "n": e.n}


def breakdown_json(found: list[BreakdownRow]) -> list[dict[str, Any]]:
    """--json's breakdown: per workload, point and configuration, fio's mean and each part (µs per I/O, mean with its
    95 % t interval over the repeats that measured it; null bounds with one repeat), the residual and the check."""
    return [{"workload": r.workload, "point": dict(r.point.coords), "configuration": r.configuration,
             "baseline": r.baseline, "lat_mean_us": _est(r.lat_mean_us), "captured_repeats": r.captured,
             "lat_captured_us": None if r.lat_captured_us is None else _est(r.lat_captured_us),
             "parts": [{"part": p.name, "components": p.name.split(" + "), "us": _est(p.us)}
                       for p in r.parts],
             "not_measured": r.not_measured, "residual_pct": r.residual_pct, "outside_check": r.flagged,
             "intervals": r.interval_words(), "capture_notes": r.notes} for r in found]
