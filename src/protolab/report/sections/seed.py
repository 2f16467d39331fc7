"""The seed beside the measurement: each finding of the study's seed, quoted, beside the sentences this run could
make about the same figure, and why this machine may not reproduce it.

The seed's findings are data in the study file (`[[seed_findings]]`, plan.seed); the measured sentences are the
report's own (each backed by its test, or saying "not tested"); the reasons are the study author's words plus what
the bottleneck analysis found in this run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup, escape

from ..model import ReportData
from .base import Page, Section

#: Which findings answer a seed finding, by its `compare`.
_KINDS = {"baseline": ("difference", "within", "no clear difference", "not tested"), "mtu": ("pair",),
          "fill": ("stage",), "time": ("long run",)}


@dataclass(frozen=True)
class SeedItem:
    """One seed finding beside this run's sentences."""

    said: str
    measured: list[str]
    here: str


def seed_items(data: ReportData) -> list[SeedItem]:
    """The plan's seed findings, each with the report's findings on the same figure."""
    if data.plan is None or not data.plan.seed_findings:
        return []
    out = []
    for s in data.plan.seed_findings:
        said = [f.text for f in data.findings if f.kind in _KINDS[s.compare]
                and set(s.metrics) & set(f.metric.split(",")) and (not s.workloads or f.workload in s.workloads)]
        out.append(SeedItem(s.said, said, s.here))
    return out


def machine_line(data: ReportData) -> str:
    """What held this run's cells back, from the bottleneck analysis, in one sentence ('' when nothing is known)."""
    found = list(data.bottlenecks.values())
    if not found:
        return ""
    kinds = Counter(b.kind for b in found)
    cpu = Counter(b.what for b in found if b.kind == "cpu")
    parts = []
    if cpu:
        parts.append(f"{kinds['cpu']} by CPU (" + ", ".join(f"{w} {n}" for w, n in cpu.most_common()) + ")")
    if kinds.get("wire"):
        parts.append(f"{kinds['wire']} by the wire (at ≥ 90 % of the modelled ceiling)")
    rest = len(found) - kinds.get("cpu", 0) - kinds.get("wire", 0)
    if rest:
        parts.append(f"{rest} by neither (storage- or latency-bound, or unknown)")
    prov = data.manifest.provenance
    return (f"On this machine ({prov.cpus if prov and prov.cpus is not None else '?'} CPUs, every server, link and "
            f"load generator on it), the bottleneck analysis found of {len(found)} cells (workload × configuration × "
            f"load point): " + "; ".join(parts) + ". Where a CPU, not the wire, held a protocol, its figures here "
            "measure that CPU's cost per I/O, and a seed's finding about the wire cannot be reproduced.")


NONE_MEASURED = "no sentence about this figure could be made from this run (not measured or not tested)."


@dataclass(frozen=True)
class SeedModel:
    seed: str
    items: list[SeedItem]
    machine: str


class SeedSection(Section[SeedModel]):
    name = "seed"
    title = "The seed beside the measurement"
    nav = "the seed beside the measurement"

    def build(self, data: ReportData) -> SeedModel | None:
        items = seed_items(data)
        if not items:
            return None
        return SeedModel(data.plan.seed if data.plan else "", items, machine_line(data))

    def markdown(self, m: SeedModel) -> list[str]:
        out = ["", f"## {self.title}", "", f"Seed: {m.seed}." if m.seed else ""]
        for i, it in enumerate(m.items, 1):
            out += ["", f"{i}. **The seed:** {it.said}", "",
                    "   **Measured here:** " + (" ".join(it.measured) if it.measured else NONE_MEASURED)]
            if it.here:
                out += ["", f"   **Why this machine may differ:** {it.here}"]
        if m.machine:
            out += ["", m.machine]
        return out

    def html(self, m: SeedModel, page: Page) -> Markup:
        items = []
        for it in m.items:
            measured = " ".join(escape(x) for x in it.measured) if it.measured else NONE_MEASURED
            here = f"<p><b>Why this machine may differ:</b> {escape(it.here)}</p>" if it.here else ""
            items.append(f"<li><p><b>The seed:</b> {escape(it.said)}</p>\n<p><b>Measured here:</b> {measured}</p>\n"
                         f"{here}</li>")
        seed = f"<p>Seed: {escape(m.seed)}.</p>" if m.seed else ""
        machine = f'<p class="note">{escape(m.machine)}</p>' if m.machine else ""
        return Markup(f'<section id="seed">\n<h2>{self.title}</h2>\n{seed}\n<ol class="seed">{"".join(items)}</ol>\n'
                      f"{machine}\n</section>")
