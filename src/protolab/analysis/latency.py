"""Latency histograms: merging fio's bins exactly and reading percentiles from them.

fio's json+ output gives, per job and direction, a histogram of completion
latencies: bin value (ns) → count. Histograms merge exactly by adding counts,
so percentiles across jobs and hosts are computed from the summed bins — never
by averaging each job's percentiles.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Mapping

from ..results.histogram import Histogram

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


def merged_percentiles(histograms: Iterable[Mapping[int, int]],
                       ps: Iterable[float] = PERCENTILES) -> tuple[dict[str, float | None], int]:
    """`percentiles(merge_bins(histograms))` and the merged count, with numpy: exactly the same figures (integer
    counts, each percentile the smallest bin whose cumulative count reaches p % of all), for the report's
    thousands of merged cells."""
    import numpy as np

    hs = [h for h in histograms if h]
    out: dict[str, float | None] = {f"p{p:g}": None for p in ps}
    if not hs:
        return out, 0
    if all(isinstance(h, Histogram) for h in hs):  # records' histograms: their arrays, joined without a copy each
        values = np.concatenate([np.frombuffer(h.arrays()[0], dtype=np.int64) for h in hs])
        counts = np.concatenate([np.frombuffer(h.arrays()[1], dtype=np.int64) for h in hs])
    else:
        values = np.fromiter(itertools.chain.from_iterable(hs), dtype=np.int64)
        counts = np.fromiter(itertools.chain.from_iterable(h.values() for h in hs), dtype=np.int64)
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    starts = np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))
    values, counts = values[starts], np.add.reduceat(counts, starts)
    values, counts = values[counts != 0], counts[counts != 0]
    running = np.cumsum(counts)
    n = int(running[-1]) if running.size else 0
    if n == 0:
        return out, 0
    wanted = sorted(ps)
    # running >= p/100·n compared as floats, as `percentiles` compares an int with that float (exact below 2^53)
    at = np.minimum(np.searchsorted(running, [p / 100.0 * n for p in wanted], side="left"), values.size - 1)
    out.update({f"p{p:g}": float(values[i]) for p, i in zip(wanted, at.tolist())})
    return out, n
