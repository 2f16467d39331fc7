"""Findings between configurations that differ in one link setting only, e.g. the same protocol at MTU 1500 and 9000.

A study's baseline is often a configuration that lacks a metric (the direct path has no
packets on the wire, no server process), so "what did jumbo frames do to packets and CPU
per I/O for each protocol" cannot be read from the baseline comparison. Here each pair of
configurations with the same target and settings but a different MTU is compared
directly — the smaller MTU is the reference — with the same statistics as the rest of
the report: ratio of medians with its bootstrap interval, Welch t-test on log values,
Holm-corrected over all pair comparisons of a metric, a ±noise band, and "not tested"
below 3 repeats a side.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..metrics import METRICS as REGISTRY
from .batch import compare_many
from .findings import (  # noqa: F401
    MAX_NAMED_LOADS,
    METRICS,
    TABLE_ONLY,
    Finding,
    detectable_words,
    pct,
    seen,
    where_loads,
)
from .relative import Row
from .stats import HIGHER, LOWER, MIN_REPEATS, NOT_TESTED, decide

PAIR_METRICS = ("packets_per_io", "cpu_us_per_io_server", "cpu_us_per_io_total", "iops")


def _settings(plan: Any, c: Any) -> tuple:
    return (plan.target_of(c).url, c.ioengine, c.direct, tuple(sorted(c.fio.items())), c.path_policy,
            getattr(c, "controller", None), getattr(c, "server", None), getattr(c, "sessions", None))


def mtu_pairs(plan: Any) -> list[tuple[str, str, int, int]]:
    """(a, b, mtu a, mtu b): configurations identical but for the link's MTU (a has the smaller)."""
    if plan is None or plan.lab is None:
        return []
    lab = plan.lab
    if isinstance(lab, dict):  # a plan read back from a manifest keeps the lab as data
        from ..plan.topology import LabSpec

        try:
            lab = LabSpec.model_validate(lab)
        except ValueError:
            return []
    out = []
    configs = list(plan.configurations)
    for i, a in enumerate(configs):
        for b in configs[i + 1:]:
            if _settings(plan, a) != _settings(plan, b):
                continue
            la, lb = lab.link.merged(a.link), lab.link.merged(b.link)
            if la.model_copy(update={"mtu": lb.mtu}) != lb or la.mtu == lb.mtu:
                continue
            out.append((a.name, b.name, la.mtu, lb.mtu) if la.mtu < lb.mtu else (b.name, a.name, lb.mtu, la.mtu))
    return out


def pair_findings(rows: list[Row], plan: Any, metrics: Iterable[str] = PAIR_METRICS, *, alpha: float = 0.05,
                  noise: float = 0.02) -> list[Finding]:
    """One sentence per pair, workload and metric: what the larger MTU did, with its interval, or why not."""
    pairs = mtu_pairs(plan)
    if not pairs:
        return []
    by = {(r.workload, r.point, r.configuration): r for r in rows}
    out: list[Finding] = []
    for metric in metrics:
        if metric not in METRICS and metric not in TABLE_ONLY:
            continue
        keys, samples = [], []
        for a, b, ma, mb in pairs:
            for (w, li, c), ra in by.items():
                rb = by.get((w, li, b))
                if c != a or rb is None:
                    continue
                sa, sb = ra.samples.get(metric) or [], rb.samples.get(metric) or []
                if not sa or not sb:
                    continue
                keys.append((a, b, ma, mb, w, li, ra.load_label))
                samples.append((sa, sb))
        comps = compare_many(samples, labels=[f"{k[1]} vs {k[0]}" for k in keys], noise=noise)
        if not comps:
            continue
        grouped: dict[tuple, list[tuple[int, str, Any]]] = {}
        for (a, b, ma, mb, w, li, label), v in zip(keys, decide(comps, alpha=alpha, noise=noise)):
            grouped.setdefault((a, b, ma, mb, w), []).append((li, label, v))
        for (a, b, ma, mb, w), found in grouped.items():
            out.append(Finding("pair", _sentence(a, b, ma, mb, w, found, metric, noise), metric, w, (a, b),
                               seen(metric, [v for _, _, v in found if not v.equivalent])))
    return out


def _sentence(a: str, b: str, ma: int, mb: int, w: str, found: list, metric: str, noise: float) -> str:
    """One sentence for a pair, workload and metric over all its load points."""
    more, less, noun = REGISTRY[metric].more, REGISTRY[metric].less, REGISTRY[metric].noun
    total = len(found)
    head = (f"{w}: at {found[0][1]}, " if total == 1 else f"{w}: ") + f"MTU {mb} ({b}) against MTU {ma} ({a}):"
    parts, tails = [], []
    for direction, word in ((HIGHER, more), (LOWER, less)):
        at = [(label, v) for _, label, v in found if v.verdict == direction]
        if not at:
            continue
        shifts = [(v.ratio - 1, v.ci_low - 1, v.ci_high - 1) if direction == HIGHER else
                  (1 - v.ratio, 1 - v.ci_high, 1 - v.ci_low) for _, v in at]
        head_pct = sorted(s[0] for s in shifts)[len(shifts) // 2] if len(shifts) % 2 else \
            sum(sorted(s[0] for s in shifts)[len(shifts) // 2 - 1:len(shifts) // 2 + 1]) / 2
        claim = (f"{pct(100 * head_pct)} % ({pct(100 * min(s[1] for s in shifts))}–"
                 f"{pct(100 * max(s[2] for s in shifts))} %) {word} {noun}")
        parts.append(claim if total == 1 else f"{claim} {where_loads([lb for lb, _ in at], total)}")
    zero = [label for _, label, v in found if v.verdict == NOT_TESTED and v.ratio != v.ratio]
    untested = [(label, v) for _, label, v in found if v.verdict == NOT_TESTED and v.ratio == v.ratio]
    within = [label for _, label, v in found if v.verdict not in (HIGHER, LOWER, NOT_TESTED) and v.equivalent]
    quiet = [label for _, label, v in found if v.verdict not in (HIGHER, LOWER, NOT_TESTED) and not v.equivalent]
    could = seen(metric, [v for _, _, v in found if not v.equivalent])
    single = total == 1
    if zero:
        tails.append(f"{noun} not tested (MTU {ma} has no value to compare with)" +
                     ("" if single else f" {where_loads(zero, total)}"))
    if untested:
        n = min(v.n_min for _, v in untested)
        tails.append(f"{noun} not tested ({n} repeats; {MIN_REPEATS} needed)" +
                     ("" if single else f" {where_loads([lb for lb, _ in untested], total)}"))
    if within:
        tails.append(f"{noun} within ±{100 * noise:.0f} % (equivalence test)" +
                     ("" if single else f" {where_loads(within, total)}"))
    if quiet:
        tails.append(f"no clear difference in {noun}" + ("" if single else f" {where_loads(quiet, total)}")
                     + (f" (could have detected {detectable_words(could, named=False)})" if could else ""))
    return f"{head} " + "; ".join(parts + tails) + "."
