"""Steady state after SNIA PTS (Solid State Storage Performance Test Specification).

PTS declares steady state over a measurement window (five rounds there, five
per-second samples here by default) when
  - the range of the values, max - min, is at most 20 % of their mean, and
  - the excursion of the least-squares line fitted through them,
    |slope| * (window - 1), is at most 10 % of their mean.
The range criterion catches noise; the slope criterion catches a drift that is
still going on (a ramp whose every step is small).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RANGE_LIMIT = 0.20
EXCURSION_LIMIT = 0.10


@dataclass(frozen=True)
class SteadyVerdict:
    """Whether one window of samples is in steady state, with the two PTS criteria as % of the mean."""

    steady: bool
    range_pct: float  # (max - min) / mean * 100
    excursion_pct: float  # |slope| * (window - 1) / mean * 100
    window_start: int  # index of the window's first sample in the series
    window: int
    reason: str


def _judge(values: np.ndarray, start: int, range_limit: float, excursion_limit: float) -> SteadyVerdict:
    n = int(values.size)
    mean = float(values.mean())
    if mean <= 0.0:
        return SteadyVerdict(False, float("nan"), float("nan"), start, n,
                             f"mean of the window is {mean:g}; nothing to be steady at")
    range_pct = float(values.max() - values.min()) / mean * 100.0
    # Least-squares slope per sample; x is the sample index inside the window.
    slope = float(np.polyfit(np.arange(n, dtype=float), values, 1)[0])
    excursion_pct = abs(slope) * (n - 1) / mean * 100.0
    failures = []
    if range_pct > range_limit * 100.0:
        failures.append(f"range {range_pct:.1f} % of the mean exceeds {range_limit:.0%}")
    if excursion_pct > excursion_limit * 100.0:
        trend = "rising" if slope > 0 else "falling"
        failures.append(f"fitted line is {trend}: excursion {excursion_pct:.1f} % of the mean exceeds "
                        f"{excursion_limit:.0%}")
    where = f"samples {start}..{start + n - 1}"
    if failures:
        return SteadyVerdict(False, range_pct, excursion_pct, start, n,
                             f"not steady over {where}: " + "; ".join(failures))
    reason = (f"steady over {where}: range {range_pct:.1f} % ≤ {range_limit:.0%}, "
              f"excursion {excursion_pct:.1f} % ≤ {excursion_limit:.0%}")
    return SteadyVerdict(True, range_pct, excursion_pct, start, n, reason)


def _check(samples: Sequence[float], window: int) -> np.ndarray:
    if window < 2:
        raise ValueError(f"steady state: window must be at least 2 samples, got {window}")
    arr = np.asarray(samples, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        raise ValueError("steady state: samples must be finite")
    return arr


def steady_state(
    samples: Sequence[float],
    *,
    window: int = 5,
    range_limit: float = RANGE_LIMIT,
    excursion_limit: float = EXCURSION_LIMIT,
) -> SteadyVerdict:
    """Judge the trailing `window` samples (the end of the series) against the PTS criteria."""
    arr = _check(samples, window)
    if arr.size < window:
        return SteadyVerdict(False, float("nan"), float("nan"), 0, int(arr.size),
                             f"only {arr.size} samples; steady state needs a window of {window}")
    start = int(arr.size - window)
    return _judge(arr[start:], start, range_limit, excursion_limit)


def find_steady_window(
    samples: Sequence[float],
    *,
    window: int = 5,
    range_limit: float = RANGE_LIMIT,
    excursion_limit: float = EXCURSION_LIMIT,
) -> SteadyVerdict:
    """The first window (scanning from the start) that is steady; if none, the verdict on the last window."""
    arr = _check(samples, window)
    if arr.size < window:
        return steady_state(arr, window=window, range_limit=range_limit, excursion_limit=excursion_limit)
    verdict = None
    for start in range(0, arr.size - window + 1):
        verdict = _judge(arr[start:start + window], start, range_limit, excursion_limit)
        if verdict.steady:
            return verdict
    assert verdict is not None
    return verdict


def first_steady_index(
    samples: Sequence[float],
    *,
    window: int = 5,
    range_limit: float = RANGE_LIMIT,
    excursion_limit: float = EXCURSION_LIMIT,
) -> int | None:
    """Index of the first sample at which the trailing window has become steady, or None.

    This is where a warm-up-until-steady loop may stop: the last sample of the
    first steady window (its first sample is this index - window + 1).
    """
    verdict = find_steady_window(samples, window=window, range_limit=range_limit, excursion_limit=excursion_limit)
    return verdict.window_start + verdict.window - 1 if verdict.steady else None
