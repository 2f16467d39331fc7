"""The crossover (analysis.crossover): with a swept service time or link rate (plan.sweep), first in the report —
where each configuration is within the band of the baseline's IOPS and where not, and the model's prediction
against the measurement at every point; without a sweep, after the seed's claims — each configuration's added time
per I/O and where, by the model, it would start to matter, and over the RAM pool what that pool means for a reader.
With a seed claim's band, the seed's claim is judged at the plan's own point (the seed's table) and this section shows
how far it reaches; a swept link rate gets the measurement without the model's prediction (a service-time model),
and a run sweeping both coordinates gets no crossover, only a line saying so. Every figure is the run's own; the
array speeds named are measured points or the presets' (plan.storage)."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup, escape

from ...analysis.crossover import Added, AtPoint
from ...plan.coordinates import value_text
from ...plan.storage import PRESETS, parse_time_us
from ..markdown import md_table
from ..report_data import CrossoverData, ReportData
from .section import Page, Section

ZERO = ("0 µs is the device model's daemon answering each request at once: the fastest array the model gives (FUSE, "
        "the loop device and btrfs still in every path alike; the RAM pool without the model is faster still), not an "
        "array anyone sells.")
MODEL = ("Prediction: o, each configuration's added time per I/O over {baseline}, measured once at {ref}; d, "
         "{baseline}'s own time beyond the service time s, from its latency at each point; with N outstanding I/Os "
         "and the array's P servers the IOPS ratio is min(N/(s+d+o), P/s) / min(N/(s+d), P/s) — the asymptotic "
         "bounds of operational analysis (no queueing below saturation; other limits such as CPU not modelled).")


BOTH = ("This run sweeps both the service time and the link rate: the crossover is stated for one swept "
        "coordinate with the other held, so none is stated here; sweep one coordinate per run (the other at the "
        "plan's own value) to get it.")
LINK = ("The model's prediction (an added time per I/O against the array's service time) is not made for a swept "
        "link rate: a link's rate changes the wire's time per I/O, which the model does not take; the measured "
        "ratios stand alone.")
REACH = "{judged} The sentences below show how far the seed's claim reaches across the sweep."


@dataclass
class CrossoverModel:
    swept: str | None  # "service_time" / "link_rate", None without a sweep
    baseline: str
    band: float
    band_source: str
    sentences: list[tuple[str, str, str]] = field(default_factory=list)  # workload, load label, sentence
    rows: list[list[str]] = field(default_factory=list)  # the prediction table
    added: list[str] = field(default_factory=list)  # the added-time sentences
    model: str = ""
    saturated: list[str] = field(default_factory=list)
    ram: str = ""  # what the RAM pool means (no sweep, RAM pool)
    zero: bool = False
    judged: str = ""  # the band is a seed claim's: where that claim is judged (`ReportData.judged`)
    note: str = ""  # what the section does not state, and why (a link-rate sweep's model; two swept coordinates)


def _ratio(p: AtPoint) -> str:
    return f"{p.ratio:.2f} ({p.ci_low:.2f}–{p.ci_high:.2f})"


def _added_sentence(a: Added, baseline: str, band: float, where: str, below: float) -> str:
    depth = "" if a.oio_per_stream == 1 else (f" (at {a.total_oio} outstanding I/Os: the run has no point at 1 per "
                                              "stream, so this includes their queueing)")
    ci = f" (95 % CI {a.lo_us:,.0f} to {a.hi_us:,.0f} µs)" if a.lo_us == a.lo_us else ""
    if a.o_us <= 0:
        return f"{a.configuration} adds no time per I/O over {baseline}{where}: {a.o_us:+.0f} µs{ci}{depth}."
    return (f"{a.configuration} adds {a.o_us:.0f} µs{ci} per I/O over {baseline}{where}{depth}; by the model it "
            f"costs more than {100 * band:g} % of IOPS wherever {baseline}'s own latency per I/O is below "
            f"{value_text('service_time', _two_digits(below))} (o·(1 − b)/b).")


def _two_digits(us: float) -> float:
    """A threshold read from the model, to two significant digits: 4,755 µs → 4,800 µs (4.8 ms)."""
    return float(f"{us:.2g}")


class CrossoverSection(Section[CrossoverModel]):
    """``first``: the instance placed first, which speaks for a sweep; the other speaks for a run without one."""

    def __init__(self, first: bool) -> None:
        self.first = first
        self.name = self.nav = "crossover" if first else "added-time"
        self.title = "Crossover: where each configuration is within the band" if first else \
            "Each configuration's added time per I/O"

    def build(self, data: ReportData) -> CrossoverModel | None:
        c, plan = data.crossover, data.plan
        if c is None or plan is None or self.first != (c.swept is not None):
            return None
        swept, band, source = c.swept, c.band, c.band_source
        if c.both:
            return CrossoverModel(swept, data.baseline, band, source, note=BOTH)
        if swept is None:
            return self._unswept(data, c)
        m = CrossoverModel(swept, data.baseline, band, source, zero=swept == "service_time" and any(
            p.axis == 0 for p in c.points), judged=data.judged if source.startswith("the seed's") else "",
            note="" if swept == "service_time" else LINK)
        groups: dict[tuple[str, int, str, str], list[AtPoint]] = {}
        for p in c.points:
            groups.setdefault((p.workload, p.total_oio, p.load, p.configuration), []).append(p)
        for key, ps in sorted(groups.items()):
            w, _, load, _ = key
            m.sentences.append((w, load, c.sentences[key]))
            for p in sorted(ps, key=lambda p: p.axis):
                pred = "–" if p.predicted is None else f"{p.predicted:.2f}"
                m.rows.append([w, load, p.configuration, value_text(swept, p.axis), _ratio(p), pred,
                               p.outcome + (" (array saturated)" if p.saturated else "")])
        sat = sorted({(p.workload, p.load, p.axis) for p in c.points if p.saturated})
        P = c.parallelism
        m.saturated.extend(f"{w} at {load}, {value_text(swept, s)}: {data.baseline} at ≥ 90 % "
                           f"of the array's P/s = {P} × 1e6 / {s} = {P * 1e6 / s:,.0f} IOPS" for w, load, s in sat)
        if c.added:
            a0 = next(iter(c.added.values()))
            ref = value_text("service_time", a0.at_us or 0)
            m.added.extend(_added_sentence(a, data.baseline, band, f" ({a.workload}, at {ref})", c.below_us.get(k, 0.0))
                           for k, a in c.added.items())
            m.model = MODEL.format(baseline=data.baseline, ref=ref)
        return m

    def _unswept(self, data: ReportData, c: CrossoverData) -> CrossoverModel | None:
        if not c.added:
            return None
        band, added = c.band, c.added
        m = CrossoverModel(None, data.baseline, band, c.band_source)
        m.added.extend(_added_sentence(a, data.baseline, band, f" ({a.workload})", c.below_us.get(k, 0.0))
                       for k, a in added.items())
        if c.ram:
            slow = c.slow
            slow_us = parse_time_us(PRESETS[slow].service_time, "service_time")
            costs = "; ".join(f"{a.configuration}'s added {a.o_us:.0f} µs would cost "
                              f"~{100 * c.slow_cost[k]:.0f} %" for k, a in added.items() if a.o_us > 0)
            m.ram = (f"This run's pool answers from RAM (no device model): these are the protocols' own costs at the "
                     f"fastest array this lab has, where an I/O's time is almost all protocol and stack — a property "
                     f"of this RAM pool, not of the protocols alone. An array's service time dilutes them: by the "
                     f"model (a closed loop below saturation loses o/(s + d + o)), at {slow}'s "
                     f"{value_text('service_time', slow_us)} "
                     f"({PRESETS[slow].source.split(':')[0]}) {costs or 'no configuration adds time'} of IOPS — "
                     f"predicted, not measured here. `protolab run --builtin array-speed` measures where each "
                     f"protocol crosses ±{100 * band:g} % of the direct path.")
        return m

    def markdown(self, m: CrossoverModel) -> list[str]:
        out = ["", f"## {self.title}", ""]
        if m.swept is not None and m.note == BOTH:
            return out + [m.note]
        if m.swept is not None:
            out += [f"Claim tested at every point: within ±{100 * m.band:g} % of {m.baseline}'s IOPS (band from "
                    f"{m.band_source}); 95 % bootstrap interval of the ratio of medians.", ""]
            if m.judged:
                out += [REACH.format(judged=m.judged), ""]
            out += [f"- {w} · {load}: {s}" for w, load, s in m.sentences]
            if m.zero:
                out += ["", ZERO]
            if m.saturated:
                out += ["", "Array saturated (a saturated array hides the protocol again): " + "; ".join(m.saturated)
                        + "."]
            if m.added:
                out += ["", *(f"- {a}" for a in m.added), "", m.model]
            if m.note:
                out += ["", m.note]
            out += ["", md_table(["workload", "load point", "configuration", m.swept.replace("_", " "),
                                  "measured ratio (95 % CI)", "predicted", "within the band"], m.rows,
                                 left=["workload", "load point", "configuration", "within the band"])]
            return out
        out += [f"Band: ±{100 * m.band:g} % of {m.baseline}'s IOPS ({m.band_source}).", ""]
        out += [f"- {a}" for a in m.added]
        if m.ram:
            out += ["", m.ram]
        return out

    def html(self, m: CrossoverModel, page: Page) -> Markup:
        md = self.markdown(m)[3:]
        parts, items = [], []
        for line in md:
            if line.startswith("- "):
                items.append(f"<li>{escape(line[2:])}</li>")
                continue
            if items:
                parts.append(f"<ul>{''.join(items)}</ul>")
                items = []
            if line.startswith("|") or not line:
                continue
            parts.append(f"<p>{escape(line)}</p>")
        if items:
            parts.append(f"<ul>{''.join(items)}</ul>")
        if m.rows:
            head = ["workload", "load point", "configuration", (m.swept or "").replace("_", " "),
                    "measured ratio (95 % CI)", "predicted", "within the band"]
            body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in m.rows)
            parts.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + f"</tr>{body}</table>")
        return Markup(f'<section id="{self.name}">\n<h2>{escape(self.title)}</h2>\n' + "\n".join(parts)
                      + "\n</section>")
