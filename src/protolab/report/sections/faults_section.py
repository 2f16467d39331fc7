"""Faults under load (plan.faults, analysis.fault_figures): per fault, sentences comparing the configurations, a
table of each configuration's stall, its longest span with no answer, errors, IOPS while the fault lasted and time
back to steady with their intervals over repeats (beside the same configuration with no fault), and its timelines —
IOPS and mean latency per 100 ms, the fault's time shaded."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from ...analysis.fault_figures import Estimate, FaultRow
from ...results.faultwindow import gave_up_words
from ..chart import Chart
from ..markdown import md_table
from ..report_data import FaultData, ReportData
from .section import Page, Section, chart_lines

HOW = ("Each fault is a value of the fault coordinate; \"none\" is each configuration measured the same way with no "
       "fault. During every window of a plan with faults fio logs each job's IOPS and mean completion latency per "
       "10 ms (log_avg_msec) and counts I/O errors without stopping (continue_on_error). The stall is the longest "
       "span of the window with no completion (10 ms resolution); a window whose fio gave up has no completion from "
       "then to its planned end, so its stall runs to the window's end. A failed I/O is no completion: \"no answer\" "
       "is the longest span in which no I/O was answered, with data or an error: the stall, except that a stall in "
       "which fio's first error came ends at that error (the arrival of the fio status that first counted it: up "
       "to a status interval late). Errors are those fio counted and went on "
       "after (total_err) and, when fio gave up, the error that ended its job (which total_err leaves out). IOPS "
       "while the fault lasted are the mean over its span as % of the same window's IOPS before it; back to steady "
       "is the time from the fault's end to the first window of 5 × 0.5 s after it that is steady by the SNIA rule "
       "(range ≤ 20 %, excursion ≤ 10 % of the mean). Intervals: the mean over repeats with its 95 % t interval. "
       "The fault's time is when protolab's schedule acted, counted from the warm-up's end as protolab saw fio's "
       "status. With method.heatmap the latency panel is a heatmap per configuration (fio's completion latency "
       "histograms per 100 ms, its repeats added): when the slow I/Os completed, not only their mean.")
HEADERS = ["workload", "point", "configuration", "fault", "repeats", "stall (s)", "no answer (s)", "I/O errors",
           "IOPS while it lasted", "back to steady (s)"]


def interval(e: Estimate | None, scale: float = 1.0, digits: int = 2) -> str:
    """'5.10 (4.90–5.30)', '5.10' (one repeat, or repeats alike to the digits shown), '–'."""
    if e is None:
        return "–"
    f = f"{{:.{digits}f}}"
    text, low, high = (f.format(v * scale) for v in (e.mean, e.low, e.high))
    return text if math.isnan(e.low) or low == high else f"{text} ({low}–{high})"


def row(r: FaultRow) -> list[str]:
    """One table row of a configuration at a fault (or with none)."""
    degraded = "–" if r.degraded_pct is None else (f"{interval(r.degraded_pct, digits=0)} %"
                                                   + (f" · {r.degraded_iops.mean:,.0f} IOPS" if r.degraded_iops
                                                      else ""))
    if r.kind is None or not r.repeats:
        back = "–"
    elif r.not_back == r.repeats:
        back = "not back within the window"
    else:
        back = interval(r.recovery_s) + (f" ({r.not_back} of {r.repeats} not back)" if r.not_back else "")
    errors = interval(r.errors, digits=1) + (f" (first: {r.first_error})" if r.first_error else "")
    stall = interval(r.stall_ms, 1e-3)
    if r.gave_up:  # fio ended the job on an error: no completion from then to the window's planned end
        errors += f"; fio gave up in {r.gave_up} of {r.repeats}: {gave_up_words(r.gave_up_with)}"
        stall += " (to the window's end: fio gave up)" if r.gave_up == r.repeats else \
            f" ({r.gave_up} of {r.repeats} to the window's end: fio gave up)"
    fault = r.fault + (f" (not done in {r.not_done} windows: the lab's control failed)" if r.not_done else "")
    return [r.workload, r.point.label.replace(f"fault {r.fault} · ", ""), r.configuration, fault,
            str(r.repeats), stall, interval(r.unanswered_ms, 1e-3), errors, degraded, back]



@dataclass
class FaultsModel:
    how: str
    sentences: list[tuple[str, str, str]] = field(default_factory=list)  # workload, point, words
    rows: list[list[str]] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


class FaultsSection(Section[FaultsModel]):
    name = "faults"
    title = "Faults under load"
    nav = "faults"

    def build(self, data: ReportData) -> FaultsModel | None:
        f: FaultData | None = data.faults
        if f is None or not f.rows:
            return None
        return FaultsModel(HOW, list(f.sentences), [row(r) for r in f.rows],
                           [c for c in data.charts if c.section == self.name])

    def markdown(self, m: FaultsModel) -> list[str]:
        out = ["", f"## {self.title}", "", m.how, ""]
        out += [f"- {w} · {p}: {s}" for w, p, s in m.sentences]
        out += ["", md_table(HEADERS, m.rows, left=["workload", "point", "configuration", "fault", "I/O errors",
                                                    "IOPS while it lasted", "back to steady (s)"])]
        return out + (["", *chart_lines(m.charts)] if m.charts else [])

    def html(self, m: FaultsModel, page: Page) -> Markup:
        items = "".join(f"<li>{escape(w)} · {escape(p)}: {escape(s)}</li>" for w, p, s in m.sentences)
        body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in m.rows)
        table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in HEADERS) + f"</tr>{body}</table>"
        charts = Markup("").join(page.chart(c) for c in m.charts)
        return Markup(f'<section id="{self.name}">\n<h2>{escape(self.title)}</h2>\n<p>{escape(m.how)}</p>\n'
                      f"<ul>{items}</ul>\n{table}\n") + charts + Markup("\n</section>")
