"""The seed beside the measurement: each finding of the study's seed beside this run's sentences on the same
figure (report.seednote makes the items), and what held this run's cells back."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from ..model import ReportData
from .base import Page, Section
from ..seednote import SeedItem, machine_line, seed_items

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
