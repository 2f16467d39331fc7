"""Latency histograms: merging fio's bins exactly and reading percentiles from them.

fio's json+ output gives, per job and direction, a histogram of completion
latencies: bin value (ns) → count. Histograms merge exactly by adding counts,
so percentiles across jobs and hosts are computed from the summed bins — never
by averaging each job's percentiles.
"""

from __future__ import annotations

from typing import Iterable, Mapping

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def merge_bins(histograms: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """The sum of several histograms (bin value → count), in bin order."""
    total: dict[int, int] = {}
    get = total.get
    for h in histograms:
        for value, count in h.items():
            total[value] = get(value, 0) + count
    return {int(v): int(c) for v, c in sorted(total.items()) if c}


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


def percentiles(bins: Mapping[int, int], ps: Iterable[float] = PERCENTILES, *,
                in_order: bool = False) -> dict[str, float | None]:
    """Percentiles keyed 'p50', 'p90', 'p95', 'p99', 'p99.9' (in the bins' unit), each by `percentile`'s rule.

    One pass over the sorted bins serves every percentile (``in_order``: the bins are already sorted by
    value, as `merge_bins` returns them).
    """
    wanted = sorted(ps)
    items = list(bins.items()) if in_order else sorted((int(v), int(c)) for v, c in bins.items())
    n = sum(c for _, c in items)
    out: dict[str, float | None] = {f"p{p:g}": None for p in ps}
    if n == 0:
        return out
    k, running = 0, 0
    for value, count in items:
        running += count
        while k < len(wanted) and running >= wanted[k] / 100.0 * n:
            out[f"p{wanted[k]:g}"] = float(value)
            k += 1
        if k == len(wanted):
            break
    for p in wanted[k:]:
        out[f"p{p:g}"] = float(items[-1][0])
    return out
