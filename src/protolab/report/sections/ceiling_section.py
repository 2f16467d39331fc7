"""Measured IOPS against the wire model's ceiling for each link, and frames and bytes per I/O against the model
(tables.ceiling_charts); the note says what has no link model and how offloads change what interfaces count."""

from __future__ import annotations

from .chart_section import ChartSection


class CeilingSection(ChartSection):
    name = "ceiling"
    title = "Measured results against the wire ceiling"
    nav = "wire ceiling"
    always = True
