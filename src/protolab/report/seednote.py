"""The report's seed verdicts: each claim of the study's seed findings judged on this run (analysis.claims), and
what held this run's cells back.

The seed's findings and their claims are data in the study file (`[[seed_findings]]`, plan.seed); the verdicts,
figures and reasons are computed from this run's records, bottleneck analysis and long-run trends.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..analysis.claims import ClaimVerdict, claim_verdicts

if TYPE_CHECKING:
    from .model import ReportData


def seed_verdicts(data: ReportData) -> list[ClaimVerdict]:
    """Every claim of the plan's seed findings, judged on this run."""
    return claim_verdicts(data.plan, data.records, data.bottlenecks, data.trends)


def unclaimed(data: ReportData) -> list[tuple[int, str]]:
    """(index, words) of the seed findings the study states no claim for (quoted, not tested)."""
    if data.plan is None:
        return []
    return [(i, f.said) for i, f in enumerate(data.plan.seed_findings) if not f.claims]


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
