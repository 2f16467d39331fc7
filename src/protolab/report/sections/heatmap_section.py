"""Latency over time as a distribution (plan.heatmap_option, report.heatmapdata): per configuration at the highest
load point, I/Os completed per time step and latency row, the colour a count; the note (heatmapdata.HOW) says how to
read them."""

from __future__ import annotations

from .chart_section import ChartSection


class HeatmapSection(ChartSection):
    name = "heatmap"
    title = "Latency heatmaps over time"
    nav = "latency heatmaps"
    always = False
