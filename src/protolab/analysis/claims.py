"""A verdict per seed claim, computed from the run's own records (plan.seed says what a claim is).

Each claim becomes *parts*: one subject configuration against its reference, at one workload and point, on one
metric (for `compare = "time"`: one long run's change over the claim's horizon). A part is compared as the report
compares everything (`stats.compare`: ratio of medians with a bootstrap 95 % interval, Welch's test on the logs;
`stats.decide`: Holm-corrected across the claim's parts, ±noise band), then judged against the seed's statement:

- a band (`at_least`/`at_most`/`within`, in % change): **reproduced** when the whole interval lies inside the
  band (and, for a band that excludes "no change", the test calls the change in the band's direction);
  **not reproduced** when the whole interval lies outside it; **opposite** when the test calls a change the
  other way than a one-directional band; **inconclusive** otherwise (the interval reaches across an edge);
- `better` (`worse`): **reproduced** when the test calls a difference in the metric's better (worse) direction,
  **opposite** when it calls one the other way; when it calls none, **not reproduced** only where the data speak
  against the claim (the equivalence test puts the change within the noise band, or the whole interval lies on
  the other side of no change), else **inconclusive** (a change the claim's way that this run cannot call);
- **not testable here** when the test cannot run (fewer than 3 repeats a side, a missing figure or cell) — or, for
  a time claim, when this run's long run is shorter than the claim's horizon (a trend is never extrapolated).

A claim listing several metrics holds on any of them (each part takes its best metric). The claim's verdict:
reproduced when every part is; not testable when none could be tested; opposite when some part is opposite and
none reproduced; inconclusive when no part is against it (only reproduced, inconclusive or untestable parts);
not reproduced otherwise. Where it is not reproduced, the reason is what the bottleneck analysis found for the
cells of those parts — never a sentence written in advance.
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Any, Iterable, Mapping

from ..metrics import METRICS
from ..plan.coordinates import Point, point_of
from ..plan.seed import Claim, SeedFinding
from .pairs import mtu_pairs
from .relative import relative_rows
from .stats import HIGHER, LOWER, NO_CLEAR_DIFFERENCE, NOT_TESTED, Verdict, compare, decide

REPRODUCED, NOT_REPRODUCED, OPPOSITE = "reproduced", "not reproduced", "opposite"
INCONCLUSIVE, NOT_TESTABLE = "inconclusive", "not testable here"
OUTCOMES = (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED, OPPOSITE, NOT_TESTABLE)  # best first (any-of metrics)


@dataclass(frozen=True)
class Part:
    """One subject against its reference at one workload and point, on one metric."""

    workload: str
    point: str  # the point's label ('1×1×4=4', 'fill 100 % · 1×1×4=4', or a long run's span)
    subject: str
    reference: str
    metric: str
    change: float | None  # % change of the subject's median against the reference's (None: not formed)
    low: float | None  # its interval, in %
    high: float | None
    outcome: str
    why: str
    cells: tuple[tuple[str, Any, str], ...] = ()  # (workload, Point, configuration) of both sides


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim of one seed finding, judged."""

    finding: int  # index of the finding in the plan (0-based)
    said: str  # the seed's words
    claim: str  # the claim as tested, in words made from its data
    verdict: str
    parts: tuple[Part, ...]
    figures: str  # the changes and intervals, with the counts of each outcome
    reason: str  # where not reproduced: what the bottleneck analysis found ('' otherwise)
    others: tuple[Part, ...] = ()  # a claim on any of several metrics: the parts of the metrics not decisive


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
               "time": f"after {claim.horizon} against the start of the same long run"}[finding.compare]
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
    where = f"; workloads {', '.join(finding.workloads)}" if finding.workloads else ""
    return f"{what}: {subjects} {against}: {said}{where}"


def _matches(name: str, patterns: list[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _pairs(finding: SeedFinding, claim: Claim, plan: Any,
           cells: Iterable[tuple[str, Point, str]]) -> list[tuple[tuple[str, Point, str], tuple[str, Point, str]]]:
    """(subject cell, reference cell) pairs of one claim."""
    cells = [c for c in cells if not finding.workloads or c[0] in finding.workloads]
    names = [c.name for c in plan.configurations]
    out = []
    if finding.compare == "baseline":
        ref = claim.reference or plan.baseline
        for w, p, c in cells:
            if c != ref and _matches(c, claim.subjects):
                out.append(((w, p, c), (w, p, ref)))
    elif finding.compare == "mtu":
        partner = {b: a for a, b, _, _ in mtu_pairs(plan) if _matches(a, claim.subjects) or _matches(b, claim.subjects)}
        out = [((w, p, c), (w, p, partner[c])) for w, p, c in cells if c in partner]
    elif finding.compare == "fill":
        levels: dict[tuple[str, str, Any], list[Point]] = {}
        for w, p, c in cells:
            if p.get("fill") is not None and c in names and _matches(c, claim.subjects):
                levels.setdefault((w, c, p.get("load")), []).append(p)
        for (w, c, _), ps in levels.items():
            ps = sorted(ps, key=lambda p: p.get("fill"))
            if len(ps) > 1:
                out.append(((w, ps[-1], c), (w, ps[0], c)))
    return out


def _outcome(claim: Claim, better: str, v: Verdict) -> tuple[str, str]:
    """A part's outcome and why, from its call (stats.decide) and the claim's statement."""
    if v.verdict == NOT_TESTED or math.isnan(v.ratio):
        return NOT_TESTABLE, v.reason
    called = v.verdict in (HIGHER, LOWER)
    if claim.better or claim.worse:
        want = HIGHER if (better == "higher") == claim.better else LOWER
        if v.verdict == want:
            return REPRODUCED, "the test calls it"
        if called:
            return OPPOSITE, "the test calls the other direction"
        against = v.equivalent or (v.ci_high <= 1 if want == HIGHER else v.ci_low >= 1)
        if against:
            return NOT_REPRODUCED, f"{NO_CLEAR_DIFFERENCE}: {v.reason}"
        return INCONCLUSIVE, f"the interval reaches the claim's direction, but the test does not call it ({v.reason})"
    lo, hi = claim.band
    a = None if lo is None else 1 + lo / 100
    b = None if hi is None else 1 + hi / 100
    inside = (a is None or v.ci_low >= a) and (b is None or v.ci_high <= b)
    outside = (b is not None and v.ci_low > b) or (a is not None and v.ci_high < a)
    up, down = a is not None and a > 1, b is not None and b < 1
    if up or down:
        want = HIGHER if up else LOWER
        if called and v.verdict != want:
            return OPPOSITE, "the test calls a change the other way"
        if inside and v.verdict == want:
            return REPRODUCED, "the interval lies inside the band and the test calls the change"
    elif inside:
        return REPRODUCED, "the interval lies inside the band"
    if outside:
        return NOT_REPRODUCED, "the interval lies outside the band"
    if inside:
        return INCONCLUSIVE, f"the interval lies inside the band, but the test does not call the change ({v.reason})"
    return INCONCLUSIVE, "the interval reaches across the band's edge"


def _time_parts(finding: SeedFinding, claim: Claim, trends: Mapping[tuple[str, str], list[Any]],
                metric: str) -> list[Part]:
    horizon = claim.horizon_s or 0.0
    parts = []
    for (w, c), ts in sorted(trends.items()):
        if (finding.workloads and w not in finding.workloads) or not _matches(c, claim.subjects):
            continue
        for t in ts or [None]:
            if t is None or t.span_s < horizon:
                span = "no long-run series" if t is None else f"this run's long run covers {t.span_s / 3600:.2g} h"
                parts.append(Part(w, "long run", c, c, metric, None, None, None, NOT_TESTABLE,
                                  f"{span}; the claim is about {claim.horizon} (a trend is never extrapolated)"))
                continue
            k = horizon / 3600
            v = Verdict("", HIGHER if t.lo > 0 else LOWER if t.hi < 0 else NO_CLEAR_DIFFERENCE,
                        1 + t.pct_per_h * k / 100, 1 + t.lo * k / 100, 1 + t.hi * k / 100, 0.0, 0.0,
                        "no clear change over time", n_min=t.blocks)
            out, why = _outcome(claim, METRICS[metric].better, v)
            parts.append(Part(w, "long run", c, c, metric, t.pct_per_h * k, t.lo * k, t.hi * k, out, why))
    return parts


def _verdict(parts: list[Part]) -> str:
    n = Counter(p.outcome for p in parts)
    if not parts or n[NOT_TESTABLE] == len(parts):
        return NOT_TESTABLE
    if n[REPRODUCED] == len(parts):
        return REPRODUCED
    if n[OPPOSITE] and not n[REPRODUCED]:
        return OPPOSITE
    if not n[NOT_REPRODUCED] and not n[OPPOSITE]:
        return INCONCLUSIVE
    return NOT_REPRODUCED


def _figures(parts: list[Part], every: list[Part] | None = None, named: bool = False) -> str:
    """'change −5.0 to −3.0 % (intervals −6.1 to −1.9 %) over 4 comparisons: 4 reproduced' (counts of the decisive
    ``parts``); with ``named`` (a claim on any of several metrics) the changes of ``every`` part per metric, each
    with its title."""
    n = Counter(p.outcome for p in parts)
    counts = ", ".join(f"{n[o]} {o}" for o in OUTCOMES if n[o])
    over = f"{len(parts)} comparison{'s' if len(parts) != 1 else ''}: {counts}"
    done = [p for p in (every if every is not None else parts) if p.change is not None]
    if not done:
        return over if parts else "no comparison"
    said = []
    for m in dict.fromkeys(p.metric for p in done):
        mine = [p for p in done if p.metric == m]
        ch = [p.change for p in mine]
        lows = [p.low for p in mine if p.low is not None]
        highs = [p.high for p in mine if p.high is not None]
        ci = f" (intervals {_span(min(lows), max(highs))} %)" if lows and highs else ""
        said.append(f"{METRICS[m].title + ' ' if named else ''}change {_span(min(ch), max(ch))} %{ci}")
    return "; ".join(said) + f" over {over}"


def _reason(parts: list[Part], bottlenecks: Mapping[tuple[str, Any, str], Any]) -> str:
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


def _directions(parts: list[Part], records: list[Any]) -> str:
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


def claim_verdicts(plan: Any, records: Iterable[Any], bottlenecks: Mapping[tuple[str, Any, str], Any] | None = None,
                   trends: Mapping[tuple[str, str], list[Any]] | None = None, *, alpha: float = 0.05,
                   noise: float = 0.02) -> list[ClaimVerdict]:
    """Every claim of the plan's seed findings, judged on ``records`` (see the module's text). ``bottlenecks``:
    analysis.bottleneck's verdict per (workload, Point, configuration); ``trends``: the long-run trends of IOPS per
    (workload, configuration), one per long run, for time claims."""
    if plan is None or not plan.seed_findings:
        return []
    records = list(records)
    wanted = {m for f in plan.seed_findings for c in f.claims for m in f.claim_metrics(c)}
    # each cell's values per repeat, grouped by workload, point and configuration as every table groups them
    samples = {(r.workload, r.point, r.configuration): r.samples for r in relative_rows(records, plan.baseline, wanted)}
    out = []
    for i, f in enumerate(plan.seed_findings):
        for claim in f.claims:
            metrics = f.claim_metrics(claim)
            if f.compare == "time":
                parts = every = _time_parts(f, claim, trends or {}, metrics[0])
            else:
                parts, every = _compared_parts(f, claim, plan, samples, metrics, alpha=alpha, noise=noise)
            out.append(ClaimVerdict(i, f.said, describe(f, claim, plan.baseline), _verdict(parts), tuple(parts),
                                    _figures(parts, every, len(metrics) > 1),
                                    " ".join(x for x in (_reason(parts, bottlenecks or {}),
                                                         _directions(parts, records)) if x),
                                    tuple(p for p in every if p not in parts)))
    return out


def _compared_parts(f: SeedFinding, claim: Claim, plan: Any, samples: Mapping, metrics: list[str], *,
                    alpha: float, noise: float) -> tuple[list[Part], list[Part]]:
    """The decisive part of each (subject, reference) pair (its best metric) and every metric's part."""
    keys, pairs = [], []
    for subj, ref in _pairs(f, claim, plan, samples):
        for m in metrics:
            keys.append((subj, ref, m))
            pairs.append((samples.get(ref, {}).get(m) or [], samples[subj].get(m) or []))
    testable = [i for i, (a, b) in enumerate(pairs) if a and b]
    comps = [compare(*pairs[i], seed=0, noise=noise) for i in testable]
    called = dict(zip(testable, decide(comps, alpha=alpha, noise=noise) if comps else []))
    best: dict[tuple, Part] = {}
    every: list[Part] = []
    for i, (subj, ref, m) in enumerate(keys):
        v = called.get(i)
        if v is None:
            side = ref[2] if not pairs[i][0] else subj[2]
            out, why, ch, lo, hi = NOT_TESTABLE, f"no {METRICS[m].noun} measured for {side} here", None, None, None
        else:
            out, why = _outcome(claim, METRICS[m].better, v)
            ok = not math.isnan(v.ratio)
            ch, lo, hi = ((v.ratio - 1) * 100, (v.ci_low - 1) * 100, (v.ci_high - 1) * 100) if ok else (None,) * 3
        label = subj[1].label if subj[1] == ref[1] else f"{subj[1].label} against {ref[1].label}"
        part = Part(subj[0], label, subj[2], ref[2], m, ch, lo, hi, out, why, (subj, ref))
        every.append(part)
        key = (subj, ref)
        if key not in best or OUTCOMES.index(out) < OUTCOMES.index(best[key].outcome):
            best[key] = part
    return list(best.values()), every
