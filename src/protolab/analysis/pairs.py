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

from .findings import METRICS, TABLE_ONLY, Finding, pct
from .relative import Row
from .stats import HIGHER, LOWER, NOT_TESTED, MIN_REPEATS, compare_many, decide

PAIR_METRICS = ("packets_per_io", "cpu_us_per_io_server", "cpu_us_per_io_total", "iops")
_WORDS = {"packets_per_io": ("more", "fewer", "packets per I/O"),
          "cpu_us_per_io_server": ("more", "less", "server CPU per I/O"),
          "cpu_us_per_io_total": ("more", "less", "machine CPU per I/O"),
          "iops": ("more", "fewer", "IOPS")}


def _settings(plan: Any, c: Any) -> tuple:
    return (plan.target_of(c).url, c.ioengine, c.direct, tuple(sorted(c.fio.items())), c.path_policy,
            getattr(c, "controller", None))


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
    by = {(r.workload, r.load_index, r.configuration): r for r in rows}
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
        more, less, noun = _WORDS[metric]
        for (a, b, ma, mb, w, li, label), v in zip(keys, decide(comps, alpha=alpha, noise=noise)):
            head = f"{w}: at {label}, MTU {mb} ({b}) against MTU {ma} ({a}):"
            if v.verdict in (HIGHER, LOWER):
                shift = (v.ratio - 1, v.ci_low - 1, v.ci_high - 1) if v.verdict == HIGHER else \
                    (1 - v.ratio, 1 - v.ci_high, 1 - v.ci_low)
                text = (f"{head} {pct(100 * shift[0])} % ({pct(100 * shift[1])}–{pct(100 * shift[2])} %) "
                        f"{more if v.verdict == HIGHER else less} {noun}.")
            elif v.verdict == NOT_TESTED and v.ratio != v.ratio:  # NaN: the reference's median is zero
                text = f"{head} {noun} not tested (MTU {ma} has no value to compare with)."
            elif v.verdict == NOT_TESTED:
                text = f"{head} {noun} not tested ({v.n_min} repeats; {MIN_REPEATS} needed)."
            elif v.equivalent:
                text = f"{head} {noun} within ±{100 * noise:.0f} % (equivalence test)."
            else:
                text = f"{head} no clear difference in {noun}."
            out.append(Finding("pair", text, metric, w, (a, b)))
    return out
