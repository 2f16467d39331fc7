"""The seed's claims, tested: a verdict table (the seed's section and words, the claim as tested, the verdict, the
figures, the detectable difference), then where a claim did not hold, what the bottleneck analysis found, and what
held this run's cells back.

The seed's findings and their claims are data in the study file (`[[seed_findings]]`, plan.seed); the verdicts,
figures and reasons are computed from this run's records, bottleneck analysis and long-run trends
(analysis.claims). It opens the report of every study that has seed findings; a swept plan's table says at which
swept value its claims were judged (its own point; the crossover shows the others), and a table judges the same
claims at every swept point: how far each verdict reaches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup, escape

from ...analysis.claims import ClaimVerdict
from ...plan.coordinates import value_text
from ...plan.sweep import chosen
from ..markdown import md_table
from ..report_data import ReportData
from .section import Page, Section

QUOTED = "quoted only (the study states no claim to test)"
COLUMNS = ("#", "§", "the seed said", "claim tested", "verdict", "figures", "MDD")
#: what the MDD column is, under the table
MDD_NOTE = ("MDD: the smallest difference each comparison's test could have called with 80 % power at the variance "
            "seen (the range over the claim's comparisons); an inconclusive claim says how many repeats would decide "
            "it. A band marked protolab's is protolab's reading of words that give no number.")


def row_of(v: ClaimVerdict) -> tuple[str, str, str, str, str, str, str]:
    """(number, section, the seed said, claim tested, verdict, figures, MDD) of one claim."""
    fig = "; ".join(x for x in (v.figures, v.decide) if x)
    return (str(v.finding + 1), v.section or "", v.said, v.claim, v.verdict, fig, v.mdd)


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
    if kinds.get("storage"):
        parts.append(f"{kinds['storage']} by the array (at ≥ 90 % of its device model's saturation)")
    rest = len(found) - kinds.get("cpu", 0) - kinds.get("wire", 0) - kinds.get("storage", 0)
    if rest:
        parts.append(f"{rest} by neither (storage- or latency-bound, or unknown)")
    prov = data.manifest.provenance
    return (f"On this machine ({prov.cpus if prov and prov.cpus is not None else '?'} CPUs, every server, link and "
            f"load generator on it), the bottleneck analysis found of {len(found)} cells (workload × configuration × "
            f"load point): " + "; ".join(parts) + ".")


REACH = ("How far each verdict reaches: the same claims judged at every swept point as at the plan's own (marked); "
         "the verdict above is the plan's.")


def reach(data: ReportData) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """A swept plan's reach table: its head (#, §, claim tested, each swept point) and one row per claim with its
    verdict at each point (`ReportData.reach`); empty without a sweep."""
    points = data.reach
    if not points:
        return (), ()
    own = chosen(data.plan)

    def label(at: dict[str, int]) -> str:
        words = " · ".join(f"{k.replace('_', ' ')} {value_text(k, v)}" for k, v in at.items())
        return words + (" (the plan's)" if at == own else "")

    head = ("#", "§", "claim tested", *(label(at) for at, _ in points))
    rows = tuple((str(v.finding + 1), v.section or "", v.claim, *(vs[i].verdict for _, vs in points))
                 for i, v in enumerate(points[0][1]))
    return head, rows


@dataclass(frozen=True)
class SeedModel:
    seed: str
    verdicts: list[ClaimVerdict]
    quoted: list[tuple[int, str, str]]  # findings without a claim or a reason: (index, section, words)
    machine: str
    judged: str = ""  # a swept plan: where its claims are judged (`ReportData.judged`)
    reach_head: tuple[str, ...] = ()  # a swept plan: #, §, claim tested, then each swept point
    reach_rows: tuple[tuple[str, ...], ...] = ()  # each claim's verdict at every swept point

    def rows(self) -> list[tuple[str, str, str, str, str, str, str]]:
        """(number, section, the seed said, claim tested, verdict, figures, MDD) in the findings' order."""
        out = [row_of(v) for v in self.verdicts]
        out += [(str(i + 1), sec, said, "—", QUOTED, "", "") for i, sec, said in self.quoted]
        return sorted(out, key=lambda r: int(r[0]))


class SeedSection(Section[SeedModel]):
    name = "seed"
    title = "The seed's claims, tested"
    nav = "the seed's claims"

    def build(self, data: ReportData) -> SeedModel | None:
        if data.plan is None or not data.plan.seed_findings:
            return None
        quoted = [(i, f.section or "", f.said) for i, f in enumerate(data.plan.seed_findings)
                  if not f.claims and not f.untestable]
        head, rows = reach(data)
        return SeedModel(data.plan.seed, data.claims, quoted, machine_line(data), data.judged,
                         head, rows)

    def markdown(self, m: SeedModel) -> list[str]:
        out = ["", f"## {self.title}", ""]
        if m.seed:
            out += [f"Seed: {m.seed}.", ""]
        if m.judged:
            out += [m.judged, ""]
        out.append(md_table(list(COLUMNS), [[n, sec, said.replace("\n", " "), claim, f"**{verdict}**", fig, mdd]
                                            for n, sec, said, claim, verdict, fig, mdd in m.rows()],
                            left=list(COLUMNS[1:])))
        out += ["", MDD_NOTE]
        reasons = [(v.finding + 1, v.reason) for v in m.verdicts if v.reason]
        if reasons:
            out += [""] + [f"- Claim of finding {n}: {r}" for n, r in reasons]
        if m.reach_rows:
            out += ["", REACH, "", md_table(list(m.reach_head), [list(r) for r in m.reach_rows],
                                            left=list(m.reach_head[1:]))]
        if m.machine:
            out += ["", m.machine]
        return out

    def html(self, m: SeedModel, page: Page) -> Markup:
        seed = f"<p>Seed: {escape(m.seed)}.</p>" if m.seed else ""
        seed += f'<p class="judged">{escape(m.judged)}</p>' if m.judged else ""
        rows = "".join(f'<tr><td>{n}</td><td>{escape(sec)}</td><td>{escape(said)}</td><td>{escape(claim)}</td>'
                       f'<td class="verdict {escape(verdict.replace(" ", "-"))}"><b>{escape(verdict)}</b></td>'
                       f"<td>{escape(fig)}</td><td>{escape(mdd)}</td></tr>"
                       for n, sec, said, claim, verdict, fig, mdd in m.rows())
        head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
        table = (f'<table class="seed"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
                 f'<p class="note">{escape(MDD_NOTE)}</p>')
        reasons = "".join(f"<li>Claim of finding {v.finding + 1}: {escape(v.reason)}</li>" for v in m.verdicts
                          if v.reason)
        reasons = f'<ul class="seed-reasons">{reasons}</ul>' if reasons else ""
        machine = f'<p class="note">{escape(m.machine)}</p>' if m.machine else ""
        if m.reach_rows:
            rh = "".join(f"<th>{escape(c)}</th>" for c in m.reach_head)
            rb = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in m.reach_rows)
            machine = (f'<p>{escape(REACH)}</p><table class="seed-reach"><thead><tr>{rh}</tr></thead><tbody>{rb}'
                       f"</tbody></table>\n{machine}")
        return Markup(f'<section id="seed">\n<h2>{self.title}</h2>\n{seed}\n{table}\n{reasons}\n{machine}\n'
                      "</section>")
