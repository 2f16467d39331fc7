"""A long run's series read as a whole: steady-state onset, change per hour with its interval, SLO misses.

Per-interval samples are not independent: a busy second is followed by a busy second, and
an ordinary least-squares interval on them would be far too narrow (it would call drift
where there is only slow noise). The change over time is therefore estimated by **batch
means**: the series is cut into ``blocks`` consecutive blocks of equal length, and the
block means are regressed on the blocks' mid-times; the 95 % interval of the slope is
Student's t with blocks − 2 degrees of freedom. Block means of blocks much longer than
the series' correlation time are close to independent, so the interval is honest when
the run is long against its bursts; with few blocks it is wide, as it should be. The
slope is given as % of the series' mean per hour. "No clear change" when the interval
holds zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .steady import first_steady_index

#: Blocks for batch means (fewer when the series is short: at least 2 samples each).
BLOCKS = 10
MIN_BLOCKS = 4


@dataclass(frozen=True)
class Trend:
    """The fitted change of a series over time, as % of its mean per hour, with a 95 % interval."""

    pct_per_h: float
    lo: float
    hi: float
    blocks: int  # block means the line was fitted through
    span_s: float  # the time the series covers

    @property
    def clear(self) -> bool:
        """Whether the interval excludes zero (a change is called)."""
        return self.lo > 0 or self.hi < 0

    def sentence(self) -> str:
        """'−4.1 %/h (−5.0 to −3.2)' or 'no clear change (−0.3 %/h, −1.2 to 0.6)'."""
        f = lambda v: f"{v:+.{_digits(self.hi - self.lo)}f}".replace("-", "−")  # noqa: E731
        if self.clear:
            return f"{f(self.pct_per_h)} %/h ({f(self.lo)} to {f(self.hi)})"
        return f"no clear change ({f(self.pct_per_h)} %/h, {f(self.lo)} to {f(self.hi)})"


#: Repeats needed for an interval across repeats (below: their mean and spread, not tested), as for the report's
#: comparisons.
MIN_POOLED = 3


@dataclass(frozen=True)
class PooledTrend:
    """The repeats' changes per hour pooled: their mean, a 95 % interval across repeats (Student's t over the
    repeats' slopes, the unit of replication being the whole window; None below MIN_POOLED repeats) and their
    spread (the lowest and highest repeat)."""

    pct_per_h: float
    lo: float | None
    hi: float | None
    lowest: float
    highest: float
    repeats: int

    @property
    def tested(self) -> bool:
        """Whether there were repeats enough for an interval."""
        return self.lo is not None and self.hi is not None

    @property
    def clear(self) -> bool:
        """Whether the interval across repeats excludes zero (a change is called)."""
        return self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)

    def sentence(self) -> str:
        """'−1.2 %/h over 3 repeats (95 % interval across repeats −1.5 to −0.9; repeats from −1.4 to −1.0)',
        'no clear change over 3 repeats (…)' or, below MIN_POOLED repeats, the mean and each repeat, not tested."""
        lo, hi = self.lo, self.hi
        width = hi - lo if lo is not None and hi is not None else self.highest - self.lowest
        f = lambda v: f"{v:+.{_digits(width)}f}".replace("-", "−")  # noqa: E731
        spread = f"repeats from {f(self.lowest)} to {f(self.highest)}"
        if lo is None or hi is None:
            return (f"{f(self.pct_per_h)} %/h, the mean of {self.repeats} repeats ({spread}; not tested: fewer than "
                    f"{MIN_POOLED} repeats)")
        ci = f"95 % interval across repeats {f(lo)} to {f(hi)}"
        if self.clear:
            return f"{f(self.pct_per_h)} %/h over {self.repeats} repeats ({ci}; {spread})"
        return f"no clear change over {self.repeats} repeats ({f(self.pct_per_h)} %/h, {ci}; {spread})"


def pooled_trend(trends: Sequence[Trend]) -> PooledTrend | None:
    """The trends of one cell's repeats as one figure (see PooledTrend); None without any trend."""
    slopes = np.array([t.pct_per_h for t in trends], dtype=float)
    if slopes.size == 0:
        return None
    mean = float(slopes.mean())
    lo = hi = None
    if slopes.size >= MIN_POOLED:
        from scipy import stats

        half = float(stats.t.ppf(0.975, slopes.size - 1)) * float(slopes.std(ddof=1)) / float(np.sqrt(slopes.size))
        lo, hi = mean - half, mean + half
    return PooledTrend(mean, lo, hi, float(slopes.min()), float(slopes.max()), int(slopes.size))


def _digits(width: float) -> int:
    """Decimals that show an interval of ``width`` without false precision (at least one)."""
    return 1 if not np.isfinite(width) or width >= 1 else min(3, 1 + int(-np.floor(np.log10(max(width, 1e-9)))))


def trend(t_s: Sequence[float], values: Sequence[float], *, blocks: int = BLOCKS) -> Trend | None:
    """The slope of ``values`` against ``t_s`` (seconds) by batch means; None when the series is too short
    (fewer than MIN_BLOCKS blocks of 2 samples) or its mean is not positive."""
    t = np.asarray(t_s, dtype=float)
    v = np.asarray(values, dtype=float)
    keep = np.isfinite(t) & np.isfinite(v)
    t, v = t[keep], v[keep]
    k = min(blocks, v.size // 2)
    mean = float(v.mean()) if v.size else 0.0
    if k < MIN_BLOCKS or mean <= 0:
        return None
    edges = np.linspace(0, v.size, k + 1).round().astype(int)
    bt = np.array([t[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    bv = np.array([v[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])
    from scipy import stats

    fit = stats.linregress(bt, bv)
    q = float(stats.t.ppf(0.975, k - 2))
    scale = 3600.0 / mean * 100.0  # per second → % of the mean per hour
    slope, half = float(fit.slope) * scale, q * float(fit.stderr) * scale
    return Trend(pct_per_h=slope, lo=slope - half, hi=slope + half, blocks=int(k), span_s=float(t[-1] - t[0]))


def onset_s(values: Sequence[float], interval_s: float, *, window: int = 5,
            times: Sequence[float] | None = None) -> float | None:
    """When the series first holds steady by the SNIA PTS rule (the end of its first steady window), in
    seconds from its start (``times``: each value's end, when the intervals are not all ``interval_s``
    long); None if it never does."""
    ends = list(times) if times is not None else [(k + 1) * float(interval_s) for k in range(len(values))]
    kept = [(x, t) for x, t in zip(values, ends) if x is not None and np.isfinite(x)]
    if len(kept) < window:
        return None
    i = first_steady_index([x for x, _ in kept], window=window)
    return None if i is None else float(kept[i][1])


@dataclass(frozen=True)
class SloShare:
    """How many intervals missed a latency objective."""

    metric: str  # 'p95', 'p99' or 'mean'
    limit_us: float
    missed: int
    intervals: int  # intervals with a latency (an interval with no completed I/O has none)

    @property
    def pct(self) -> float:
        """The share that missed, %."""
        return 100.0 * self.missed / self.intervals if self.intervals else 0.0

    def sentence(self) -> str:
        """'p95 over 20 ms in 3 of 120 intervals (2.5 %)'."""
        limit = f"{self.limit_us / 1000:g} ms" if self.limit_us >= 1000 else f"{self.limit_us:g} µs"
        return f"{self.metric} over {limit} in {self.missed} of {self.intervals} intervals ({self.pct:.1f} %)"


def slo_share(values_us: Sequence[float | None], metric: str, limit_us: float) -> SloShare:
    """The intervals whose ``metric`` (merged over jobs and hosts) exceeded ``limit_us``."""
    have = [x for x in values_us if x is not None and np.isfinite(x)]
    return SloShare(metric, float(limit_us), sum(1 for x in have if x > limit_us), len(have))
