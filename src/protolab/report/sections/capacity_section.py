"""Capacity under the objective (plan.rate_ladder, analysis.capacity): per configuration, workload and point, where its
latency leaves its floor (the knee) and the highest offered rate that meets the plan's objective with its interval
over repeats, a table of each ladder, and latency drawn against achieved IOPS. Every figure is the run's own; the
objective is the plan's, and the device model's saturation (its parallelism over its service time) is said beside
the figures when the lab's pool has one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from ...analysis.capacity import CapacityFigure, Knee, Ladder
from ..chart import Chart
from ..markdown import md_table
from ..report_data import CapacityData, ReportData
from .section import Page, Section, chart_lines

HOW = ("Open loop: each step offers its rate whatever the storage does ({arrivals} arrivals, fio's rate_iops shared "
       "by the streams), so latency shows the queue. A step meets the objective in a repeat when it kept up there "
       "(its I/Os not fewer than the rate gives, less a Poisson count's one-sided bound at α = {alpha:g}, or its "
       "share of the rate not below the lowest step's lowest share: the harness's own shortfall) and that window's "
       "{percentile} (fio's histogram, merged over the window) is at most {limit}. The capacity of a repeat is its "
       "highest step meeting it with every lower step meeting it too; the capacity is their median, with the "
       "order-statistics interval of the median, and the next step above it is not reached (met with every lower "
       "step) in at least half of the repeats. The knee is the lowest step from which every higher step's mean "
       "latency lies above the lowest step's interval over its repeats. The search added at most {refine} steps "
       "per configuration, each the midpoint between the step at the capacity and the next one.")
HEADERS = ["workload", "point", "configuration", "knee (offered · achieved IOPS)", "capacity (IOPS)", "interval",
           "next step", "steps (search)"]


@dataclass
class CapacityModel:
    objective: str
    how: str
    sentences: list[tuple[str, str, str, str]] = field(default_factory=list)  # workload, point, configuration, words
    rows: list[list[str]] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


def _n(v: float) -> str:
    return f"{v:,.0f}"


def knee_words(k: Knee | None, g: Ladder) -> str:
    if k is None:
        if any(len(s.latency_us) < 3 for s in g.steps):
            return "its knee is not tested (fewer than 3 repeats at a step: no interval)"
        return (f"its latency stays at its floor up to its top step, {_n(g.steps[-1].offered)} IOPS offered"
                if g.steps else "no step measured")
    return (f"its latency leaves its floor at {_n(k.offered)} IOPS offered ({_n(k.achieved)} achieved): from there "
            f"every step's mean latency lies above the floor's {_n(k.floor_us[0])}–{_n(k.floor_us[1])} µs (the lowest "
            f"step, over its repeats), at {_n(k.at_us[0])}–{_n(k.at_us[1])} µs; {_n(k.below)} IOPS is still on it")


def interval_words(c: CapacityFigure) -> str:
    if math.isnan(c.low):
        return f"no interval: {len(c.per_repeat)} repeat{'s' if len(c.per_repeat) != 1 else ''}, 3 needed"
    n = len(c.per_repeat)
    what = "95 % CI" if c.coverage >= 0.95 else f"the range of {n} repeats: {100 * c.coverage:.1f} % coverage"
    return f"{_n(c.low)}–{_n(c.high)}, {what}"


def capacity_words(c: CapacityFigure | None, g: Ladder, objective: str) -> str:
    if c is None:
        return "no capacity: no step measured"
    if c.below:
        return (f"even its lowest step, {_n(g.steps[0].offered)} IOPS, misses {objective} in at least half of the "
                "repeats: its capacity is below the ladder")
    if c.above:
        return (f"every step meets {objective} in at least half of the repeats: its capacity is at least "
                f"{_n(c.value)} IOPS, the top of the ladder")
    return (f"the highest offered rate meeting {objective} is {_n(c.value)} IOPS ({interval_words(c)}); the next "
            f"step, {_n(c.next_step)} IOPS, is not reached in at least half of the repeats")


class CapacitySection(Section[CapacityModel]):
    name = "capacity"
    title = "Capacity under the latency objective"
    nav = "capacity"

    def build(self, data: ReportData) -> CapacityModel | None:
        c: CapacityData | None = data.capacity
        if c is None or not c.ladders:
            return None
        m = CapacityModel(c.objective, HOW.format(arrivals=c.arrivals, alpha=data.alpha, percentile=c.percentile,
                                                  limit=c.objective.split("≤ ")[1], refine=c.refine),
                          charts=[ch for ch in data.charts if ch.section == self.name])
        for g in c.ladders:
            words = f"{knee_words(g.knee, g)}; {capacity_words(g.capacity, g, c.objective)}."
            sat = c.saturation.get((g.workload, g.configuration))
            if sat:
                words += f" (The lab's device model saturates at {_n(sat)} IOPS: parallelism / service time.)"
            m.sentences.append((g.workload, g.label, g.configuration, words[0].upper() + words[1:]))
            k, cap = g.knee, g.capacity
            m.rows.append([g.workload, g.label, g.configuration,
                           f"{_n(k.offered)} · {_n(k.achieved)}" if k is not None else "–",
                           "–" if cap is None else ("< " + _n(g.steps[0].offered) if cap.below else
                                                    ("≥ " if cap.above else "") + _n(cap.value)),
                           interval_words(cap) if cap is not None and not cap.below else "–",
                           _n(cap.next_step) if cap is not None and cap.next_step is not None else "–",
                           f"{len(g.steps)} ({sum(s.refined for s in g.steps)})"])
        return m

    def markdown(self, m: CapacityModel) -> list[str]:
        out = ["", f"## {self.title}", "", f"Objective: {m.objective}. {m.how}", ""]
        out += [f"- {w} · {p} · **{c}**: {s}" for w, p, c, s in m.sentences]
        out += ["", md_table(HEADERS, m.rows, left=["workload", "point", "configuration", "interval"])]
        return out + (["", *chart_lines(m.charts)] if m.charts else [])

    def html(self, m: CapacityModel, page: Page) -> Markup:
        items = "".join(f"<li>{escape(w)} · {escape(p)} · <b>{escape(c)}</b>: {escape(s)}</li>"
                        for w, p, c, s in m.sentences)
        body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in m.rows)
        table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in HEADERS) + f"</tr>{body}</table>"
        charts = Markup("").join(page.chart(c) for c in m.charts)
        return Markup(f'<section id="{self.name}">\n<h2>{escape(self.title)}</h2>\n'
                      f"<p>Objective: {escape(m.objective)}. {escape(m.how)}</p>\n<ul>{items}</ul>\n{table}\n") \
            + charts + Markup("\n</section>")
