"""A chart as the report draws it: its series and the table of numbers beside it.

Pure data with no imports beyond the standard library, so that a drawing worker (report.drawer) can make one
without importing the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Series:
    """One drawn series: a name and one value per x position (None = no value)."""

    name: str
    values: list[float | None]
    low: list[float | None] | None = None  # CI whiskers, same unit as values
    high: list[float | None] | None = None
    x: list[float] | None = None  # a "timeseries" chart's x of each value (its own times); an "xy" chart's x


@dataclass
class Chart:
    """A chart and the table of absolute numbers beside it (also tables/<id>.csv, figures/<id>.png|svg)."""

    id: str
    kind: str  # "relative" (bars, baseline 100, whiskers), "percentiles", "series", "ceiling", "timeseries", "xy",
    #            "heatmap" (a series per row of ``edges``: its count at each x, the colour)
    #            "stacked" (a horizontal bar per x, the series laid end to end)
    section: str
    workload: str
    title: str
    note: str  # what the axis means, e.g. "psync = 100; above 100 = more IOPS"
    ylabel: str
    x: list[str]
    series: list[Series]
    table: list[dict[str, Any]]
    log_y: bool = False
    log_x: bool = False
    xlabel: str = ""
    hline: float | None = None  # a reference level drawn dashed (a latency objective)
    span: tuple[float, float] | None = None  # an x range drawn shaded (a fault's time in the window)
    edges: list[float] | None = None  # a "heatmap" chart's row edges on its y axis, lowest first
