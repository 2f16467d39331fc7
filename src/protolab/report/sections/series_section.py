"""The time series: IOPS per second of each cell's repeats (report.detail), and the long runs' and aging's
per-interval IOPS and latency (report.longrun_charts); without series, the note says so."""

from __future__ import annotations

from .chart_section import ChartSection


class SeriesSection(ChartSection):
    name = "series"
    title = "Per-second series of each cell"
    nav = "per-second series"
    always = True
