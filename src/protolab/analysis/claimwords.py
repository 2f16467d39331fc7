"""The seed claims' verdicts in words (analysis.claims computes them): the claim as tested, the figures of its
parts, their detectable differences, the repeats that would decide an inconclusive claim, and, where a claim did
not hold, what the bottleneck analysis and the latencies per direction found."""

from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any, Mapping

from ..metrics import METRICS
from ..plan.coordinates import point_of
from ..plan.seed import Claim, SeedFinding

REPRODUCED, NOT_REPRODUCED, OPPOSITE = "reproduced", "not reproduced", "opposite"
INCONCLUSIVE, NOT_TESTABLE = "inconclusive", "not testable here"
OUTCOMES = (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED, OPPOSITE, NOT_TESTABLE)  # best first (any-of metrics)


def _pct(v: float) -> str:
    s = f"{v:+.1f}" if abs(v) < 10 else f"{v:+.0f}"
    return s.replace("-", "−")


def _span(lo: float, hi: float) -> str:
    """'+2.0' or '−5.0 to −3.0' (one figure when both ends read the same)."""
    a, b = _pct(lo), _pct(hi)
    return a if a == b else f"{a} to {b}"


def describe(finding: SeedFinding, claim: Claim, baseline: str) -> str:
    """The claim in words, made from its data: 'IOPS: every configuration against direct, change ≥ −9 %'."""
    metrics = [METRICS[m] for m in finding.claim_metrics(claim)]
    what = " or ".join(m.title for m in metrics)
    subjects = ", ".join(claim.subjects) if claim.subjects else "every configuration"
    against = {"baseline": f"against {claim.reference or baseline}",
               "mtu": "at the larger MTU against the same configuration at the smaller",
               "fill": "at the last fill level against the first",
               "time": (f"after {claim.horizon}" if claim.horizon else "over the long run's whole span")
               + " against the start of the same long run"}[finding.compare]
    if claim.better or claim.worse:
        said = " or ".join(f"{m.more if (m.better == 'higher') == claim.better else m.less} {m.noun}"
                           for m in metrics)
        said += " (a difference the test calls)"
    else:
        lo, hi = claim.band
        if claim.within is not None:
            said = f"change within ±{claim.within:g} %"
        elif lo is not None and hi is not None:
            said = f"change {_pct(lo)} to {_pct(hi)} %"
        else:
            said = f"change ≥ {_pct(lo)} %" if lo is not None else f"change ≤ {_pct(hi)} %"
        if claim.band_source == "protolab":
            said += " (protolab's band: the seed gives no number)"
    where = f"; workloads {', '.join(finding.workloads)}" if finding.workloads else ""
    where += f"; only where the pool is {claim.layout}" if claim.layout else ""
    return f"{what}: {subjects} {against}: {said}{where}"


def figures(parts: list[Any], every: list[Any] | None = None, named: bool = False) -> str:
    """'change −5.0 to −3.0 % (intervals −6.1 to −1.9 %) over 4 comparisons: 4 reproduced' (counts of the decisive
    ``parts``); with ``named`` (a claim on any of several metrics) the changes of ``every`` part per metric, each
    with its title."""
    n = Counter(p.outcome for p in parts)
    counts = ", ".join(f"{n[o]} {o}" for o in OUTCOMES if n[o])
    over = f"{len(parts)} comparison{'s' if len(parts) != 1 else ''}: {counts}"
    done = [p for p in (every if every is not None else parts) if p.change is not None]
    if not done:
        return over if parts else "no comparison: this run measured no pair of cells the claim names"
    said = []
    for m in dict.fromkeys(p.metric for p in done):
        mine = [p for p in done if p.metric == m]
        ch = [p.change for p in mine]
        lows = [p.low for p in mine if p.low is not None]
        highs = [p.high for p in mine if p.high is not None]
        ci = f" (intervals {_span(min(lows), max(highs))} %)" if lows and highs else ""
        said.append(f"{METRICS[m].title + ' ' if named else ''}change {_span(min(ch), max(ch))} %{ci}")
    return "; ".join(said) + f" over {over}"


def reason(parts: list[Any], bottlenecks: Mapping[tuple[str, Any, str], Any]) -> str:
    """What held the cells of the parts that did not reproduce, by configuration (from the bottleneck analysis)."""
    held: dict[str, Counter] = {}
    outcomes = set()
    for p in parts:
        if p.outcome not in (NOT_REPRODUCED, OPPOSITE, INCONCLUSIVE):
            continue
        outcomes.add("inconclusive" if p.outcome == INCONCLUSIVE else "not reproduced")
        for cell in dict.fromkeys(p.cells):
            b = bottlenecks.get(cell)
            what = ("unknown" if b is None else "the wire" if b.kind == "wire" else "the array"
                    if b.kind == "storage" else f"{b.what} CPU" if b.kind == "cpu"
                    else "neither a CPU nor the wire" if b.kind == "none" else "unknown")
            held.setdefault(cell[2], Counter())[what] += 1
    if not held:
        return ""
    said = []
    for c, n in held.items():
        total = sum(n.values())
        said.append(f"{c} by " + ", ".join(f"{w} ({k} of {total} cells)" for w, k in n.most_common()))
    where = " or ".join(sorted(outcomes, reverse=True))  # "not reproduced or inconclusive"
    return f"Where it was {where}, the bottleneck analysis found " + "; ".join(said) + "."


def directions(parts: list[Any], records: list[Any]) -> str:
    """Where the parts that did not reproduce spent their time: each subject's mean read and write latency against
    its reference's, as the range of % changes over those parts' cells (medians of repeats)."""
    lat: dict[tuple, dict[str, list[float]]] = {}
    for r in records:
        if r.failed:
            continue
        for d, res in (("reads", r.result.read), ("writes", r.result.write)):
            if res.ios and res.lat_mean_us:
                lat.setdefault((r.workload, point_of(r), r.configuration), {}).setdefault(d, []).append(
                    res.lat_mean_us)
    changes: dict[tuple[str, str], dict[str, list[float]]] = {}
    for p in parts:
        if p.outcome not in (NOT_REPRODUCED, OPPOSITE) or len(p.cells) != 2:
            continue
        subj, ref = (lat.get(c, {}) for c in p.cells)
        for d in ("reads", "writes"):
            if subj.get(d) and ref.get(d):
                changes.setdefault((p.subject, p.reference), {}).setdefault(d, []).append(
                    (median(subj[d]) / median(ref[d]) - 1) * 100)
    said = [f"{s} against {ref}: " + ", ".join(f"{d} {_span(min(v), max(v))} %" for d, v in by.items())
            for (s, ref), by in changes.items()]
    return ("Mean latency per direction in those cells (reads, writes): " + "; ".join(said) + ".") if said else ""


def mdd_range(parts: list[Any]) -> tuple[float, float] | None:
    """(smallest, largest) detectable difference (%) over the parts that have one."""
    got = [p.mdd for p in parts if p.mdd is not None]
    return (min(got), max(got)) if got else None


def mdd_words(parts: list[Any]) -> str:
    """'4.1 %' or '3.2–8.0 %' (the parts' detectable differences, 80 % power), '' when none has one."""
    r = mdd_range(parts)
    if r is None:
        return ""
    a, b = (f"{v:.1f}" if v < 10 else f"{v:.0f}" for v in r)
    return f"{a} %" if a == b else f"{a}–{b} %"


def decide_words(repeats: int | None, inconclusive: bool) -> str:
    """What would decide an inconclusive claim, at the variance seen ('' for any other verdict)."""
    if not inconclusive:
        return ""
    if repeats is None:
        return ("no number of repeats decides it at the change seen (it lies on the band's edge, or a part has no "
                "figure)")
    return f"about {repeats:,} repeats a side would decide it at the variance seen (interval width ∝ 1/√n)"
