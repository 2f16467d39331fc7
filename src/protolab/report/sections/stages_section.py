"""IOPS and latency against a stage's steps (fill levels): the data is not restored between them
(report.stagecharts draws them)."""

from __future__ import annotations

from .chart_section import ChartSection


class StagesSection(ChartSection):
    name = "stages"
    title = "Against the stage (the data is not restored between its steps)"
    nav = "against the stage"
    always = False
