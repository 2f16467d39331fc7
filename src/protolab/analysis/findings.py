"""Findings: the report's sentences, written from the relative rows and the statistics' verdicts.

Only what the data supports is claimed, and every claim carries its 95 % interval.
A difference is stated only when `stats.decide` calls it (corrected test AND interval
outside the noise band); everything else is "no clear difference". Where one sentence
covers several load points, the headline is the median of their ratios and the
interval in brackets spans all of their intervals (the most cautious reading).

Corrections for multiple comparisons are made per metric, over the whole matrix of
workloads × load points × configurations (one family per metric). Beside every "no clear
difference" stands the smallest difference this run could have detected (analysis.detectable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Iterable

from ..metrics import METRICS as REGISTRY
from ..metrics import Metric, View
from ..plan.coordinates import Point
from ..results.records import CellRecord
from .batch import compare_many
from .metric_values import GETTERS
from .relative import Row, relative_rows
from .stats import HIGHER, LOWER, MIN_REPEATS, NO_CLEAR_DIFFERENCE, NOT_TESTED, Verdict, decide, outlier_advice

_QUIET = "quiet"  # a per-metric "no clear difference" before it is merged into one sentence per workload
_UNTESTED = "untested"  # likewise for "not tested": too few repeats to run any test
#: Below this many repeats no repeat is flagged: with 3 or 4 values the median absolute deviation is one
#: of the gaps itself, so any lopsided set looks like it holds an outlier.
MIN_OUTLIER_REPEATS = 5
#: "within X %" sentences are written only when every interval lies inside this bound.


#: The compared metrics (protolab.metrics), in report order; the tabled ones are `TABLE_ONLY`.
METRICS = View(compared=True)
TABLE_ONLY = View(compared=False)


def measured_metrics(records: Iterable[CellRecord] | None = None, *, rows: list[Row] | None = None
                     ) -> tuple[list[str], list[str]]:
    """(metrics present in at least one record, metrics absent from every record), in report order; from
    `study_rows`' rows when given (each holds every value of its records: the records are not read again)."""
    if rows is not None:
        present = [k for k in REGISTRY if any(r.samples.get(k) for r in rows)]
    else:
        recs = list(records or [])
        present = [k for k in REGISTRY if any(GETTERS[k](r) is not None for r in recs)]
    # a metric only some testbeds have (the hypervisor's CPU) is missing by design elsewhere, not by a gap
    return present, [k for k in REGISTRY if k not in present and not REGISTRY[k].testbeds]


def study_rows(records: Iterable[CellRecord], baseline: str, metrics: Iterable[str] | None = None) -> list[Row]:
    """`relative_rows` of every registered metric (or of ``metrics``): median of repeats and % of the baseline."""
    return relative_rows(records, baseline, list(metrics) if metrics is not None else list(REGISTRY))


Key = tuple[str, str, Point, str]  # metric, workload, point, configuration


def verdicts(rows: list[Row], baseline: str, metrics: Iterable[str] = METRICS, *, alpha: float = 0.05,
             noise: float = 0.02, method: str = "holm", seed: int = 0) -> dict[Key, Verdict]:
    """Each configuration against the baseline at the same workload and load point, per metric.

    One correction family per metric across the whole matrix. Rows without samples on
    either side are left out (nothing to compare).
    """
    base = {(r.workload, r.point): r for r in rows if r.configuration == baseline}
    out: dict[Key, Verdict] = {}
    for m in metrics:
        keys, pairs, labels = [], [], []
        for r in rows:
            b = base.get((r.workload, r.point))
            if r.configuration == baseline or b is None:
                continue
            bs, os_ = b.samples.get(m) or [], r.samples.get(m) or []
            if not bs or not os_:
                continue
            keys.append((m, r.workload, r.point, r.configuration))
            pairs.append((bs, os_))
            labels.append(f"{r.workload} {r.load_label} {r.configuration} {m}")
        comps = compare_many(pairs, labels=labels, seed=seed, noise=noise)
        for k, v in zip(keys, decide(comps, alpha=alpha, noise=noise, method=method) if comps else []):
            out[k] = v
    return out


@dataclass(frozen=True)
class Finding:
    """One sentence of the overview."""

    kind: str  # "difference", "within", "no clear difference", "outlier", "note"
    text: str
    metric: str = ""
    workload: str = ""
    configurations: tuple[str, ...] = field(default_factory=tuple)
    #: beside a "no clear difference": per metric, (metric, smallest detectable % low, high, tested α low, high)
    #: over the comparisons it covers (analysis.detectable)
    detectable: tuple[tuple[str, float, float, float, float], ...] = ()

    @property
    def detectable_pct(self) -> float | None:
        """The size every comparison of this finding could have detected with 80 % power (the largest of them)."""
        return max((d[2] for d in self.detectable), default=None)


def seen(metric: str, vs: Iterable[Verdict]) -> tuple[tuple[str, float, float, float, float], ...]:
    """(metric, detectable % low, high, tested α low, high) of the "no clear difference" verdicts among ``vs``."""
    got = [v for v in vs if v.verdict == NO_CLEAR_DIFFERENCE and math.isfinite(v.detectable)]
    if not got:
        return ()
    return ((metric, 100 * min(v.detectable for v in got), 100 * max(v.detectable for v in got),
             min(v.alpha_tested for v in got), max(v.alpha_tested for v in got)),)


def detectable_words(entries: Iterable[tuple[str, float, float, float, float]], *, named: bool) -> str:
    """'12 %', '12–15 %', or per metric 'IOPS 12 %, average service time 30–41 %' (``named``)."""
    parts = []
    for key, lo, hi, _, _ in entries:
        span = f"{pct(lo)} %" if pct(lo) == pct(hi) else f"{pct(lo)}–{pct(hi)} %"
        parts.append(f"{METRICS[key].noun} {span}" if named else span)
    return ", ".join(parts)


def pct(v: float) -> str:
    """A percentage for a sentence: one decimal below 10, none above."""
    return f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}"


def _shift(v: Verdict) -> tuple[float, float, float]:
    """(headline %, interval low %, interval high %) as the size of the change in its own direction."""
    if v.verdict == HIGHER:
        return (v.ratio - 1) * 100, (v.ci_low - 1) * 100, (v.ci_high - 1) * 100
    return (1 - v.ratio) * 100, (1 - v.ci_high) * 100, (1 - v.ci_low) * 100


def _claim(vs: list[Verdict]) -> str:
    """'12 % (8–15 %)' for one or several verdicts of the same direction."""
    shifts = [_shift(v) for v in vs]
    head = median(s[0] for s in shifts)
    return f"{pct(head)} % ({pct(min(s[1] for s in shifts))}–{pct(max(s[2] for s in shifts))} %)"


def _labels(rows: list[Row]) -> dict[tuple[str, Point], str]:
    return {(r.workload, r.point): r.load_label for r in rows}


def _difference_findings(rows: list[Row], vs: dict[Key, Verdict], baseline: str, m: Metric,
                         workload: str, configs: list[str], loads: list[int], alpha: float) -> list[Finding]:
    labels = _labels(rows)
    out: list[Finding] = []
    quiet: list[str] = []
    untested: list[str] = []
    for c in configs:
        mine = {li: vs[(m.key, workload, li, c)] for li in loads if (m.key, workload, li, c) in vs}
        if not mine:
            continue
        parts = []
        for direction, word in ((HIGHER, m.more), (LOWER, m.less)):
            at = [li for li, v in mine.items() if v.verdict == direction]
            if not at:
                continue
            where = where_loads([labels[(workload, li)] for li in at], len(loads))
            parts.append(f"{pct_claim(mine, at)} {word} {m.noun} than {baseline} {where}")
        if not parts:
            if all(v.verdict == NOT_TESTED for v in mine.values()):
                untested.append(c)
            else:
                quiet.append(c)
            continue
        rest = [li for li, v in mine.items() if v.verdict == NO_CLEAR_DIFFERENCE]
        could = seen(m.key, [mine[li] for li in rest])
        tail = ("; no clear difference " + where_loads([labels[(workload, li)] for li in rest], len(loads))
                + (f" (could have detected {detectable_words(could, named=False)})" if could else "")
                if rest else "")
        skipped = [li for li, v in mine.items() if v.verdict == NOT_TESTED]
        tail += ("; not tested " + where_loads([labels[(workload, li)] for li in skipped], len(loads))
                 if skipped else "")
        out.append(Finding("difference", f"{workload}: {c} had " + "; and ".join(parts) + tail + ".",
                           m.key, workload, (c,), could))
    if quiet:  # merged across metrics later
        out.append(Finding(_QUIET, "", m.key, workload, tuple(quiet),
                           seen(m.key, [vs[(m.key, workload, li, c)] for c in quiet for li in loads
                                        if (m.key, workload, li, c) in vs])))
    if untested:
        why = " (the baseline has no value to compare with)"
        sizes = [min(len(a), len(b)) for a, b in _sample_pairs(rows, baseline, m.key, workload, untested) if a and b]
        if sizes and min(sizes) < MIN_REPEATS:
            n = min(sizes)
            why = f" ({n} repeat{'s' if n != 1 else ''}; {MIN_REPEATS} needed)"
        out.append(Finding(_UNTESTED, why, m.key, workload, tuple(untested)))
    return out


#: A sentence names at most this many load points; beyond, it counts them ("at 120 of 238 load points").
MAX_NAMED_LOADS = 6


def where_loads(labels: list[str], total: int) -> str:
    """'at every load point', 'at 1×1×4=4, 1×2×4=8', or, for a long ladder, 'at 120 of 238 load points (a … b)'."""
    if len(labels) == total and total > 1:
        return "at every load point"
    if len(labels) <= MAX_NAMED_LOADS:
        return "at " + ", ".join(labels)
    return f"at {len(labels)} of {total} load points ({labels[0]} … {labels[-1]})"


def _sample_pairs(rows: list[Row], baseline: str, metric: str, workload: str,
                  configs: list[str]) -> list[tuple[list[float], list[float]]]:
    base = {r.point: r.samples.get(metric) or [] for r in rows
            if r.workload == workload and r.configuration == baseline}
    return [(base.get(r.point, []), r.samples.get(metric) or []) for r in rows
            if r.workload == workload and r.configuration in configs]


def pct_claim(mine: dict[int, Verdict], at: list[int]) -> str:
    """The claim for the verdicts at load points `at`: '12 % (8–15 %)'."""
    return _claim([mine[li] for li in at])


def findings(rows: list[Row], vs: dict[Key, Verdict], baseline: str, metrics: Iterable[str] = METRICS,
             *, alpha: float = 0.05, noise: float = 0.02) -> list[Finding]:
    """The overview's sentences: bounds ("all within X %"), called differences, "no clear difference", outliers."""
    out: list[Finding] = []
    workloads = list(dict.fromkeys(r.workload for r in rows))
    grouped: dict[tuple[str, str], list[Verdict]] = {}  # (metric, workload) → its verdicts, in the verdicts' order
    for (mk, wk, _, _), v in vs.items():
        grouped.setdefault((mk, wk), []).append(v)
    for w in workloads:
        loads = sorted({r.point for r in rows if r.workload == w})
        configs = list(dict.fromkeys(r.configuration for r in rows if r.workload == w and r.configuration != baseline))
        for key in metrics:
            m = METRICS[key]
            mine = grouped.get((key, w), [])
            if not mine:
                continue
            # "within" is a claim of its own: only the equivalence test (TOST at the noise band, corrected like
            # every other test) may make it, never intervals that happen to be narrow
            if mine and all(v.equivalent for v in mine) and len(configs) > 0:
                who = "All configurations" if len(configs) > 1 else configs[0]
                out.append(Finding("within", f"{w}: {who} within ±{100 * noise:.0f} % of {baseline} in {m.noun} at "
                                   "every load point (equivalence test: two one-sided Welch tests on log values, "
                                   f"Holm-corrected p < {alpha}).", key, w, tuple(configs)))
            out.extend(_difference_findings(rows, vs, baseline, m, w, configs, loads, alpha))
        out = _merge_quiet(out, w, baseline)
    out.extend(outlier_findings(rows, metrics))
    return out


def _merge_quiet(found: list[Finding], workload: str, baseline: str) -> list[Finding]:
    """One "no clear difference" sentence per workload and set of configurations, naming all its metrics."""
    keep = [f for f in found if f.kind not in (_QUIET, _UNTESTED)]
    groups: dict[tuple[str, tuple[str, ...], str], list[Finding]] = {}
    for f in found:
        if f.kind in (_QUIET, _UNTESTED):
            groups.setdefault((f.kind, f.configurations, f.text), []).append(f)
    for (kind, configs, why), fs in groups.items():
        keys = [f.metric for f in fs]
        nouns = [METRICS[k].noun for k in keys]
        what = nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " or " + nouns[-1]
        if kind == _QUIET:
            could = tuple(d for f in fs for d in f.detectable)
            said = (f" (smallest difference this run could have detected with 80 % power: "
                    f"{detectable_words(could, named=len(keys) > 1)})" if could else "")
            keep.append(Finding("no clear difference", f"{workload}: no clear difference in {what} between "
                                f"{baseline} and {', '.join(configs)} at any load point{said}.", ",".join(keys),
                                workload, configs, could))
        else:
            keep.append(Finding("not tested", f"{workload}: {what} of {', '.join(configs)} against {baseline}: "
                                f"not tested{why}.", ",".join(keys), workload, configs))
    return keep


def outlier_findings(rows: list[Row], metrics: Iterable[str] = METRICS) -> list[Finding]:
    """One finding per repeat that stands out (modified z > 3.5, from 5 repeats on); kept, with advice."""
    out = []
    for key in metrics:
        for r in rows:
            samples = r.samples.get(key) or []
            if len(samples) < MIN_OUTLIER_REPEATS:
                continue
            for line in outlier_advice(samples, what=f"{METRICS[key].noun}: repeat"):
                out.append(Finding("outlier", f"{r.workload} · {r.configuration} · {r.load_label}, {line}.", key,
                                   r.workload, (r.configuration,)))
    return out
