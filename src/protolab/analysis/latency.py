"""Latency histograms: merging fio's bins exactly and reading percentiles from them.

fio's json+ output gives, per job and direction, a histogram of completion
latencies: bin value (ns) → count. Histograms merge exactly by adding counts,
so percentiles across jobs and hosts are computed from the summed bins — never
by averaging each job's percentiles.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def merge_bins(histograms: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """The sum of several histograms (bin value → count)."""
    total: Counter[int] = Counter()
    for h in histograms:
        for value, count in h.items():
            total[int(value)] += int(count)
    return dict(sorted((v, c) for v, c in total.items() if c))


def percentile(bins: Mapping[int, int], p: float) -> float | None:
    """The p-th percentile of a histogram, by fio's own rule (smallest bin with cumulative count ≥ p % of all).

    Returns None for an empty histogram.
    """
    items = sorted((int(v), int(c)) for v, c in bins.items())
    n = sum(c for _, c in items)
    if n == 0:
        return None
    threshold = p / 100.0 * n
    running = 0
    for value, count in items:
        running += count
        if running >= threshold:
            return float(value)
    return float(items[-1][0])


def percentiles(bins: Mapping[int, int], ps: Iterable[float] = PERCENTILES) -> dict[str, float | None]:
    """Percentiles keyed 'p50', 'p90', 'p95', 'p99', 'p99.9' (in the bins' unit)."""
    return {f"p{p:g}": percentile(bins, p) for p in ps}

