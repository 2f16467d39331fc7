"""The seed's claims, tested: a verdict table (the seed's words, the claim as tested, the verdict, the figures),
then where a claim did not hold, what the bottleneck analysis found, and what held this run's cells back."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from ...analysis.claims import ClaimVerdict
from ..model import ReportData
from ..seednote import machine_line, seed_verdicts, unclaimed

QUOTED = "quoted only (the study states no claim to test)"


@dataclass(frozen=True)
class SeedModel:
    seed: str
    verdicts: list[ClaimVerdict]
    quoted: list[tuple[int, str]]  # findings without a claim: (index, words)
    machine: str

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """(number, the seed said, claim tested, verdict, figures) in the findings' order."""
        out = [(str(v.finding + 1), v.said, v.claim, v.verdict, v.figures) for v in self.verdicts]
        out += [(str(i + 1), said, "—", QUOTED, "") for i, said in self.quoted]
        return sorted(out, key=lambda r: int(r[0]))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


class SeedSection:
    name = "seed"
    title = "The seed's claims, tested"

    def build(self, data: ReportData) -> SeedModel | None:
        if data.plan is None or not data.plan.seed_findings:
            return None
        return SeedModel(data.plan.seed, seed_verdicts(data), unclaimed(data), machine_line(data))

    def markdown(self, m: SeedModel) -> list[str]:
        out = ["", f"## {self.title}", ""]
        if m.seed:
            out += [f"Seed: {m.seed}.", ""]
        out += ["| # | the seed said | claim tested | verdict | figures |", "|---|---|---|---|---|"]
        out += [f"| {n} | {_cell(said)} | {_cell(claim)} | **{verdict}** | {_cell(fig)} |"
                for n, said, claim, verdict, fig in m.rows()]
        reasons = [(v.finding + 1, v.reason) for v in m.verdicts if v.reason]
        if reasons:
            out += [""] + [f"- Claim of finding {n}: {r}" for n, r in reasons]
        if m.machine:
            out += ["", m.machine]
        return out

    def html(self, m: SeedModel) -> Markup:
        seed = f"<p>Seed: {escape(m.seed)}.</p>" if m.seed else ""
        rows = "".join(f'<tr><td>{n}</td><td>{escape(said)}</td><td>{escape(claim)}</td>'
                       f'<td class="verdict {escape(verdict.replace(" ", "-"))}"><b>{escape(verdict)}</b></td>'
                       f"<td>{escape(fig)}</td></tr>" for n, said, claim, verdict, fig in m.rows())
        table = ('<table class="seed"><thead><tr><th>#</th><th>the seed said</th><th>claim tested</th>'
                 f"<th>verdict</th><th>figures</th></tr></thead><tbody>{rows}</tbody></table>")
        reasons = "".join(f"<li>Claim of finding {v.finding + 1}: {escape(v.reason)}</li>" for v in m.verdicts
                          if v.reason)
        reasons = f'<ul class="seed-reasons">{reasons}</ul>' if reasons else ""
        machine = f'<p class="note">{escape(m.machine)}</p>' if m.machine else ""
        return Markup(f'<section id="seed">\n<h2>{self.title}</h2>\n{seed}\n{table}\n{reasons}\n{machine}\n'
                      "</section>")
