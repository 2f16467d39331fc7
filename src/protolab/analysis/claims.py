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

Each part carries its detectable difference (the smallest change its test could have called with 80 % power), and
an inconclusive part the repeats a side that would decide it at the variance seen (analysis.claimpower). A finding
the plan marks `untestable` is one verdict, "not testable here", with the plan's one-line reason.

A plan with a `[sweep]` has its claims judged at its chosen point only (plan.sweep.chosen: its own `[lab.storage]`
service time and `[lab.link]` rate, the values its arithmetic chose): the records at other swept values are the
crossover's (analysis.crossover), which shows how far the verdict reaches; `judged_at` says where, in words, and
`claim_reach` judges the same claims at every swept point.
"""

from __future__ import annotations

import fnmatch
import itertools
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..metrics import METRICS
from ..plan.coordinates import Point, value_text
from ..plan.seed import Claim, SeedFinding
from ..plan.sweep import chosen, chosen_words
from .claimpower import compared_mdd, repeats_to_decide, trend_mdd
from .claimwords import (  # noqa: F401 (the outcomes are this module's words too)
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    OPPOSITE,
    OUTCOMES,
    REPRODUCED,
    decide_words,
    describe,
    directions,
    figures,
    mdd_range,
    mdd_words,
    reason,
)
from .pairs import mtu_pairs
from .relative import relative_rows
from .stats import HIGHER, LOWER, NO_CLEAR_DIFFERENCE, NOT_TESTED, Verdict, compare, decide


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
    mdd: float | None = None  # the smallest difference (%) its test could have called, 80 % power (claimpower)
    repeats: int | None = None  # inconclusive: the repeats a side that would decide it at the variance seen


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
    section: str | None = None  # where the seed says it ('§8.1')
    band_source: str = "seed"  # whose number the band is: the seed's or protolab's
    untestable: str = ""  # the plan's reason this lab cannot test the finding ('' otherwise)

    @property
    def mdd(self) -> str:
        """The decisive parts' detectable differences in words ('3.2–8.0 %'; '' when none has one)."""
        return mdd_words(list(self.parts))

    @property
    def mdd_range(self) -> tuple[float, float] | None:
        """(smallest, largest) detectable difference (%) over the decisive parts."""
        return mdd_range(list(self.parts))

    @property
    def repeats(self) -> int | None:
        """An inconclusive claim: the repeats a side that would decide every inconclusive part at the variance
        seen (None: no number would, or the claim is not inconclusive)."""
        if self.verdict != INCONCLUSIVE:
            return None
        need = [p.repeats for p in self.parts if p.outcome == INCONCLUSIVE]
        return None if not need or any(n is None for n in need) else max(need)  # type: ignore[type-var]

    @property
    def decide(self) -> str:
        """What would decide it, in words ('' unless inconclusive)."""
        return decide_words(self.repeats, self.verdict == INCONCLUSIVE)


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
    horizon = claim.horizon_s  # None: over the long run's whole span
    parts = []
    for (w, c), ts in sorted(trends.items()):
        if (finding.workloads and w not in finding.workloads) or not _matches(c, claim.subjects):
            continue
        for t in ts or [None]:
            if t is None or (horizon is not None and t.span_s < horizon):
                span = "no long-run series" if t is None else f"this run's long run covers {t.span_s / 3600:.2g} h"
                parts.append(Part(w, "long run", c, c, metric, None, None, None, NOT_TESTABLE,
                                  f"{span}; the claim is about {claim.horizon} (a trend is never extrapolated)"))
                continue
            k = (t.span_s if horizon is None else horizon) / 3600
            v = Verdict("", HIGHER if t.lo > 0 else LOWER if t.hi < 0 else NO_CLEAR_DIFFERENCE,
                        1 + t.pct_per_h * k / 100, 1 + t.lo * k / 100, 1 + t.hi * k / 100, 0.0, 0.0,
                        "no clear change over time", n_min=t.blocks)
            out, why = _outcome(claim, METRICS[metric].better, v)
            parts.append(Part(w, "long run", c, c, metric, t.pct_per_h * k, t.lo * k, t.hi * k, out, why,
                              mdd=trend_mdd(t.lo, t.hi, t.blocks - 2, k)))
    return parts


def _layout(plan: Any) -> str | None:
    """The run's pool layout ('copy-on-write' or 'in-place'; None without a lab)."""
    lab = getattr(plan, "lab", None)
    cow = lab.get("cow") if isinstance(lab, dict) else getattr(lab, "cow", None)
    return None if lab is None else "copy-on-write" if cow else "in-place"


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


def at_chosen(plan: Any, records: Iterable[Any], at: Mapping[str, int] | None = None) -> list[Any]:
    """The ``records`` measured at the plan's chosen point of its sweep (plan.sweep.chosen; ``at``: another swept
    point); all of them without a sweep. A record without a swept coordinate (a run stored before it was swept) is
    kept."""
    own = chosen(plan) if at is None else at
    return [r for r in records if all(int(r.coords.get(k, v)) == v for k, v in own.items())]


def judged_at(plan: Any) -> str:
    """Where a swept plan's claims are judged and where the rest of its sweep is shown, in one sentence; '' without
    a sweep."""
    own, sweep = chosen(plan), getattr(plan, "sweep", None)
    if not own or sweep is None:
        return ""
    others = [f"{a.name.replace('_', ' ')} {', '.join(value_text(a.name, v) for v in a.values if v != own.get(a.name))}"
              for a in sweep.axes() if any(v != own.get(a.name) for v in a.values)]
    rest = f"; the crossover shows the others ({'; '.join(others)})" if others else ""
    return f"Judged at the plan's own point, {chosen_words(plan)}{rest}."


def claim_verdicts(plan: Any, records: Iterable[Any], bottlenecks: Mapping[tuple[str, Any, str], Any] | None = None,
                   trends: Mapping[tuple[str, str], list[Any]] | None = None, *, alpha: float = 0.05,
                   noise: float = 0.02, at: Mapping[str, int] | None = None) -> list[ClaimVerdict]:
    """Every claim of the plan's seed findings, judged on ``records`` (see the module's text). ``bottlenecks``:
    analysis.bottleneck's verdict per (workload, Point, configuration); ``trends``: the long-run trends of IOPS per
    (workload, configuration), one per long run, for time claims; ``at``: a swept point other than the plan's own
    (`claim_reach`)."""
    if plan is None or not plan.seed_findings:
        return []
    records = at_chosen(plan, records, at)
    wanted = {m for f in plan.seed_findings for c in f.claims for m in f.claim_metrics(c)}
    # each cell's values per repeat, grouped by workload, point and configuration as every table groups them
    samples = {(r.workload, r.point, r.configuration): r.samples for r in relative_rows(records, plan.baseline, wanted)}
    out = []
    for i, f in enumerate(plan.seed_findings):
        if f.untestable:
            out.append(ClaimVerdict(i, f.said, "—", NOT_TESTABLE, (), f"not testable here: {f.untestable}", "",
                                    section=f.section, untestable=f.untestable))
        for claim in f.claims:
            metrics = f.claim_metrics(claim)
            layout = _layout(plan)
            if claim.layout is not None and layout != claim.layout:
                why = (f"not testable here: the claim is about a {claim.layout} pool; this run's "
                       + (f"pool is {layout}" if layout else "storage is not the lab's pool"))
                out.append(ClaimVerdict(i, f.said, describe(f, claim, plan.baseline), NOT_TESTABLE, (), why, "",
                                        section=f.section, band_source=claim.band_source))
                continue
            if f.compare == "time":
                parts = every = _time_parts(f, claim, trends or {}, metrics[0])
            else:
                parts, every = _compared_parts(f, claim, plan, samples, metrics, alpha=alpha, noise=noise)
            out.append(ClaimVerdict(i, f.said, describe(f, claim, plan.baseline), _verdict(parts), tuple(parts),
                                    figures(parts, every, len(metrics) > 1),
                                    " ".join(x for x in (reason(parts, bottlenecks or {}),
                                                         directions(parts, records)) if x),
                                    tuple(p for p in every if p not in parts), section=f.section,
                                    band_source=claim.band_source))
    return out


def claim_reach(plan: Any, records: Iterable[Any], bottlenecks: Mapping[tuple[str, Any, str], Any] | None = None, *,
                alpha: float = 0.05, noise: float = 0.02) -> list[tuple[dict[str, int], list[ClaimVerdict]]]:
    """How far each verdict reaches: a swept plan's claims judged at every swept point (each combination of its
    swept values, the plan's own among them), as at its own. Time claims and untestable findings are left out (a
    long run carries no swept value); [] without a sweep or claims."""
    sweep = getattr(plan, "sweep", None)
    if plan is None or sweep is None or not plan.seed_findings:
        return []
    records = list(records)
    axes = sweep.axes()
    out = []
    for values in itertools.product(*(a.values for a in axes)):
        at = dict(zip((a.name for a in axes), values))
        vs = claim_verdicts(plan, records, bottlenecks, None, alpha=alpha, noise=noise, at=at)
        out.append((at, [v for v in vs if not v.untestable and plan.seed_findings[v.finding].compare != "time"]))
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
    verdicts = decide(comps, alpha=alpha, noise=noise) if comps else []
    called = dict(zip(testable, verdicts))
    seen, tested_at = compared_mdd([c.log_se for c in comps], [c.log_df for c in comps],
                                   [v.p_adjusted for v in verdicts], alpha, noise)
    mdd = dict(zip(testable, seen))
    comp = dict(zip(testable, comps))
    edges = _edges(claim, noise)
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
        more = None
        if out == INCONCLUSIVE and ch is not None:
            c = comp[i]
            more = repeats_to_decide(ch, lo, hi, v.n_min, edges, log_se=c.log_se, log_df=c.log_df, alpha=tested_at)
        part = Part(subj[0], label, subj[2], ref[2], m, ch, lo, hi, out, why, (subj, ref),
                    mdd=mdd.get(i) if v is not None and v.verdict != NOT_TESTED else None, repeats=more)
        every.append(part)
        key = (subj, ref)
        if key not in best or OUTCOMES.index(out) < OUTCOMES.index(best[key].outcome):
            best[key] = part
    return list(best.values()), every


def _edges(claim: Claim, noise: float) -> list[float]:
    """The edges (%) a part's interval must clear to be decided: the band's, and for a claim with a direction the
    noise band's (a call needs the interval outside it)."""
    lo, hi = claim.band
    edges = [e for e in (lo, hi) if e is not None]
    directed = claim.better or claim.worse or (lo is not None and lo > 0) or (hi is not None and hi < 0)
    return edges + ([-100 * noise, 100 * noise] if directed else [])
