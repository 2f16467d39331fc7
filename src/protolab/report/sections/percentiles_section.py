"""Latency percentiles per configuration, merged from fio's histograms (report.detail draws them); without stored
histograms, the note says so."""

from __future__ import annotations

from .chart_section import ChartSection


class PercentilesSection(ChartSection):
    name = "percentiles"
    title = "Latency percentiles per configuration"
    nav = "latency percentiles"
    always = True
