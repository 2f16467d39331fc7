"""The seed's claims in two runs side by side, for `protolab compare A B`: each claim's verdict, figures and
detectable difference (MDD: the smallest difference its tests could have called, 80 % power) in run A and in run
B, so that a user who ran one study over two environments (`run --device-model ram` and `--device-model
hdd-array`, two link speeds, two machines) sees in one table which verdicts depend on what differs.

Each side's verdicts are computed as its own report computes them (report.sections.seed_section over
report.tables.build: the run's records, its bottleneck analysis and long-run trends); nothing is typed in advance. A
claim is matched by its finding's number and its words; a claim only one run's plan states is shown with "—" on the
other side.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

from ..analysis.claims import ClaimVerdict
from ..results.manifest import Manifest
from ..results.records import CellRecord
from ..results.rundir import RunDir
from .markdown import md_table

ABSENT = "—"
COLUMNS = ("#", "claim tested", "verdict A", "figures A", "MDD A", "verdict B", "figures B", "MDD B")


@dataclass(frozen=True)
class ClaimPair:
    """One seed claim as judged on run A and on run B (None: that run's plan does not state it)."""

    finding: int  # 1-based, as the report numbers findings
    claim: str
    a: ClaimVerdict | None
    b: ClaimVerdict | None

    @property
    def changed(self) -> bool:
        """Both runs judged the claim and their verdicts differ."""
        return self.a is not None and self.b is not None and self.a.verdict != self.b.verdict

    def row(self) -> list[str]:
        def side(v: ClaimVerdict | None) -> list[str]:
            if v is None:
                return [ABSENT, "", ""]
            return [v.verdict, "; ".join(x for x in (v.figures, v.decide) if x), v.mdd]
        return [str(self.finding), self.claim, *side(self.a), *side(self.b)]


def verdicts_of(rundir: RunDir, manifest: Manifest, records: list[CellRecord]) -> list[ClaimVerdict]:
    """The run's seed-claim verdicts, as its report computes them, from its ``manifest`` and ``records`` as the
    compare read them ([] when its plan has no seed findings)."""
    from . import tables

    plan = tables.plan_of(manifest)
    if plan is None or not plan.seed_findings:
        return []
    return tables.build(manifest, records, intervals=rundir.intervals).claims


def claim_pairs(a: list[ClaimVerdict], b: list[ClaimVerdict]) -> list[ClaimPair]:
    """A's claims in order, each with B's verdict of the same claim, then the claims only B states."""
    key = lambda v: (v.finding, v.claim)  # noqa: E731
    in_b = {key(v): v for v in b}
    out = [ClaimPair(v.finding + 1, v.claim, v, in_b.pop(key(v), None)) for v in a]
    return out + [ClaimPair(v.finding + 1, v.claim, None, v) for v in in_b.values()]


def tally(pairs: list[ClaimPair]) -> str:
    """'The verdict differs between A and B in 1 of 2 claims: claim 1 (A: not reproduced; B: reproduced).'"""
    both = [p for p in pairs if p.a is not None and p.b is not None]
    changed = [p for p in both if p.changed]
    if not both:
        return "No claim is stated by both runs' plans."
    if not changed:
        return f"The verdict is the same in A and in B for all {len(both)} claims both runs state."
    return (f"The verdict differs between A and B in {len(changed)} of {len(both)} claims: "
            + "; ".join(f"claim of finding {p.finding} (A: {p.a.verdict}; B: {p.b.verdict})"  # type: ignore[union-attr]
                        for p in changed) + ".")


def reasons(pairs: list[ClaimPair]) -> list[str]:
    """Why a claim did not hold on a side, from that run's bottleneck analysis."""
    return [f"Claim of finding {p.finding}, run {side}: {v.reason}" for p in pairs
            for side, v in (("A", p.a), ("B", p.b)) if v is not None and v.reason]


def claims_markdown(pairs: list[ClaimPair]) -> list[str]:
    """compare.md's section (none when neither run states a claim)."""
    if not pairs:
        return []
    rows = [[n, claim, f"**{va}**", fa, ma, f"**{vb}**", fb, mb]
            for n, claim, va, fa, ma, vb, fb, mb in (p.row() for p in pairs)]
    out = ["## The seed's claims in A and in B", "", tally(pairs), "",
           md_table(list(COLUMNS), rows, left=list(COLUMNS[1:]))]
    why = reasons(pairs)
    return out + ([""] + [f"- {r}" for r in why] if why else []) + [""]


def claims_html(pairs: list[ClaimPair]) -> Markup | None:
    """compare.html's section (None when neither run states a claim)."""
    if not pairs:
        return None
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)

    def cells(p: ClaimPair) -> str:
        n, claim, va, fa, ma, vb, fb, mb = p.row()
        mark = ' class="changed"' if p.changed else ""
        return (f"<tr{mark}><td>{n}</td><td>{escape(claim)}</td>"
                f'<td class="verdict {escape(va.replace(" ", "-"))}"><b>{escape(va)}</b></td><td>{escape(fa)}</td>'
                f'<td>{escape(ma)}</td>'
                f'<td class="verdict {escape(vb.replace(" ", "-"))}"><b>{escape(vb)}</b></td><td>{escape(fb)}</td>'
                f"<td>{escape(mb)}</td></tr>")
    why = "".join(f"<li>{escape(r)}</li>" for r in reasons(pairs))
    return Markup(f'<section id="claims">\n<h2>The seed\'s claims in A and in B</h2>\n<p>{escape(tally(pairs))}</p>\n'
                  f'<table class="seed"><thead><tr>{head}</tr></thead><tbody>'
                  + "".join(cells(p) for p in pairs) + "</tbody></table>\n"
                  + (f'<ul class="seed-reasons">{why}</ul>' if why else "") + "\n</section>")


def claims_csv(pairs: list[ClaimPair]) -> list[dict[str, str]]:
    """claims.csv's rows beside compare.csv."""
    return [dict(zip(COLUMNS, p.row())) | {"verdict differs": "yes" if p.changed else "no"} for p in pairs]
