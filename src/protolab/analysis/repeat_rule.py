"""Adaptive repeats: does a cell need another measured window, and why (or why not)?

Pure: it sees one value per repeat (each a whole measured window, DESIGN.md) and the
plan's rule as numbers. The interval is Student's t 95 % interval of the mean — the
one that exists from two repeats on — as ± % of the mean; agreement is the repeats'
range (max − min) as % of their median, S5's "the first two disagree".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as sps


def mean_interval_pct(values: Sequence[float], level: float = 0.95) -> float:
    """Half-width of the t interval of the mean, as % of the mean (inf with fewer than 2 values or mean ≤ 0)."""
    n = len(values)
    if n < 2:
        return math.inf
    mean = sum(values) / n
    if mean <= 0:
        return math.inf
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return float(sps.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n) / mean * 100


def spread_pct(values: Sequence[float]) -> float:
    """(max − min) / median in % (inf with fewer than 2 values or a median ≤ 0)."""
    if len(values) < 2:
        return math.inf
    s = sorted(values)
    mid = len(s) // 2
    median = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    return (s[-1] - s[0]) / median * 100 if median > 0 else math.inf


@dataclass(frozen=True)
class Decision:
    """Whether a cell gets another repeat, and the reason in a sentence."""

    more: bool
    reason: str


def next_repeat(values: Sequence[float], *, minimum: int, maximum: int, ci_pct: float | None = None,
                agree_pct: float | None = None) -> Decision:
    """Another repeat while fewer than ``minimum``, or while a rule is unmet and fewer than ``maximum``."""
    n = len(values)
    if n < minimum:
        return Decision(True, f"repeat {n + 1} of at least {minimum}")
    met, unmet = [], []
    if ci_pct is not None:
        w = mean_interval_pct(values)
        (met if w <= ci_pct else unmet).append(
            f"95 % interval ±{w:.1f} % {'within' if w <= ci_pct else 'wider than'} ±{ci_pct:g} %")
    if agree_pct is not None:
        s = spread_pct(values)
        (met if s <= agree_pct else unmet).append(
            f"repeats {s:.1f} % apart, {'within' if s <= agree_pct else 'more than'} {agree_pct:g} %")
    if not unmet:
        return Decision(False, f"stopped after {n}: {'; '.join(met)}")
    if n >= maximum:
        return Decision(False, f"stopped at the maximum of {maximum}: {'; '.join(unmet)}")
    return Decision(True, f"repeat {n + 1}: {'; '.join(unmet)}")
