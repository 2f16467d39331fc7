"""Where each microsecond goes (analysis.time_breakdown, issue 46): per workload and point, a table of each
configuration's mean latency split into the initiator, the network, the server and the device (a part not
measured folded into its neighbour, by name), with the intervals over repeats and the check that the parts add up
to fio's mean; and a stacked bar per configuration beside the baseline."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from ...analysis.time_breakdown import RESIDUAL_PCT, BreakdownRow, PartEstimate
from ..chart import Chart
from ..markdown import md_table
from ..report_data import ReportData
from .section import Page, Section, chart_lines

HOW = ("fio's mean completion latency is split at the times measured below it along the I/O's path, each a mean per "
       "request: the request→reply time captured at the load host's port and at the storage server's port "
       "(method.breakdown: tshark's matching of requests to replies, on a sub-window of the last repeat) and the "
       "device model's queue + service time (its own counters, every window with a device model). initiator = fio's "
       "mean while the capture ran − the host's; network = the host's − the server's; server = the server's − the "
       "device's; device = the device's per request × its requests per fio I/O. A time not measured joins the two "
       "parts beside it into one, named by both; a path with no wire has no network and no server. Each part is the "
       "mean over the repeats that measured it, with its 95 % t interval (one repeat: no interval). The check: the "
       "parts (a part below zero — its times out of order — counted as zero) add up to the fio mean the first part "
       f"is taken from within ±{RESIDUAL_PCT:g} %.")
HEADERS = ["workload", "point", "configuration", "fio mean µs", "parts (µs per I/O)", "sum vs fio", "intervals"]


def part_words(p: PartEstimate) -> str:
    """'initiator 70.1 (65.0–75.2)', 'network 30.0 (1 repeat)'."""
    e = p.us
    if p.tested:
        return f"{p.name} {e.mean:,.1f} ({e.low:,.1f}–{e.high:,.1f})"
    return f"{p.name} {e.mean:,.1f} ({e.n} repeat{'s' if e.n != 1 else ''})"


def row(r: BreakdownRow) -> list[str]:
    """One table row: a configuration at a workload and point."""
    lat = r.lat_mean_us
    fio = f"{lat.mean:,.1f}" + ("" if math.isnan(lat.low) else f" ({lat.low:,.1f}–{lat.high:,.1f})")
    if r.lat_captured_us is not None:
        fio += f"; while captured {r.lat_captured_us.mean:,.1f}"
    check = "–" if math.isnan(r.residual_pct) else f"{r.residual_pct:+.1f} %" + (
        f" (outside ±{RESIDUAL_PCT:g} %)" if r.flagged else "")
    return [r.workload, r.point.label, r.configuration + (" (baseline)" if r.baseline else ""), fio,
            "; ".join(part_words(p) for p in r.parts), check,
            r.interval_words() + "".join(f"; the capture's {n}" for n in r.notes)]


@dataclass
class BreakdownModel:
    how: str
    rows: list[list[str]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)  # the findings' sentences of the added time
    charts: list[Chart] = field(default_factory=list)


class BreakdownSection(Section[BreakdownModel]):
    name = "breakdown"
    title = "Where each microsecond goes"
    nav = "time"

    def build(self, data: ReportData) -> BreakdownModel | None:
        if not data.breakdown:
            return None
        return BreakdownModel(HOW, [row(r) for r in data.breakdown],
                              [f.text for f in data.findings if f.kind == "breakdown"],
                              [c for c in data.charts if c.section == self.name])

    def markdown(self, m: BreakdownModel) -> list[str]:
        out = ["", f"## {self.title}", "", m.how, ""]
        out += [f"- {s}" for s in m.sentences] + ([""] if m.sentences else [])
        out += [md_table(HEADERS, m.rows, left=["workload", "point", "configuration", "parts (µs per I/O)",
                                                "intervals"])]
        return out + (["", *chart_lines(m.charts)] if m.charts else [])

    def html(self, m: BreakdownModel, page: Page) -> Markup:
        items = "".join(f"<li>{escape(s)}</li>" for s in m.sentences)
        body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in m.rows)
        table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in HEADERS) + f"</tr>{body}</table>"
        charts = Markup("").join(page.chart(c) for c in m.charts)
        return Markup(f'<section id="{self.name}">\n<h2>{escape(self.title)}</h2>\n<p>{escape(m.how)}</p>\n'
                      + (f"<ul>{items}</ul>\n" if items else "") + f"{table}\n") + charts + Markup("\n</section>")
