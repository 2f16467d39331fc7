"""What a verdict could have seen, and what would decide it: the detectable difference of each claim part, and how
many repeats would decide an inconclusive one at the variance this run saw.

**Detectable difference (MDD).** For a compared part, the smallest true shift of the medians that Welch's test on
the logs would call with 80 % power at the α the claim's family was tested at (analysis.detectable: the noncentral
t, never below the noise band). For a time part (a long run's trend), the same for the fitted slope: its standard
error is the trend interval's half-width over t_{0.975, df}, with df = blocks − 2 for a fitted line (repeats − 1 for
repeats' slopes pooled), times the horizon in hours (a claim's; an aging sentence's: per hour).

**Repeats to decide.** An inconclusive part's interval reaches across an edge e of the claim's band (for a
one-directional claim, the noise band's edge too: a call needs the interval outside it). A bootstrap or t interval's
half-width scales as 1/√n with n repeats a side, so with the change c and the half-width h on e's side seen at n₀
repeats, the interval clears e once h · √(n₀ / n) < |c − e|:

    n = ⌈ n₀ · (h / |c − e|)² ⌉,   the largest over the edges the interval crosses.

Where the interval already lies inside the band but Welch's test does not call the change (p above the tested α),
the log change must reach t · se, with se ∝ 1/√n: n = ⌈ n₀ · (t · se / |ln(1 + c/100)|)² ⌉. Both assume the change
and the spread stay as measured; a change on an edge (c = e) is decided by no number of repeats (None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from .detectable import as_percent, family_alpha, smallest_detectable


def compared_mdd(log_se: Sequence[float], log_df: Sequence[float], p_adjusted: Sequence[float], alpha: float,
                 noise: float) -> tuple[list[float | None], float]:
    """The detectable difference (%) of each comparison of one family (None where it was not tested), and the α
    the family was tested at."""
    tested_at = family_alpha(list(p_adjusted), alpha)
    if not log_se:
        return [], tested_at
    pct = as_percent(smallest_detectable(list(log_se), list(log_df), tested_at), noise)
    return [float(v) if math.isfinite(v) else None for v in np.atleast_1d(pct)], tested_at


def trend_mdd(lo: float, hi: float, df: float, hours: float, alpha: float = 0.05) -> float | None:
    """The detectable change (%) over ``hours`` of a trend whose 95 % t interval per hour is ``lo`` to ``hi`` with
    ``df`` degrees of freedom (a fitted line: blocks − 2; repeats' slopes pooled: repeats − 1); None below 1 df."""
    if df < 1 or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    se = (hi - lo) / 2 / float(special.stdtrit(df, 0.975))
    lam = float(smallest_detectable(1.0, df, alpha)[()])
    return lam * se * hours if math.isfinite(lam) else None


def repeats_to_decide(change: float, low: float, high: float, n: int, edges: Sequence[float], *,
                      log_se: float | None = None, log_df: float | None = None,
                      alpha: float | None = None) -> int | None:
    """Repeats a side that would decide a part whose change ``change`` % has the interval ``low`` to ``high`` % at
    ``n`` repeats, against the claim's band ``edges`` (%), at the spread seen (see the module's text). None: no
    number would (the change lies on an edge), or the figures are missing."""
    if n < 1 or not all(math.isfinite(v) for v in (change, low, high)):
        return None
    crossed = [e for e in edges if low < e < high]
    need = float(n)
    for e in crossed:
        gap = abs(change - e)
        if gap == 0:
            return None
        half = high - change if e > change else change - low
        need = max(need, n * (half / gap) ** 2)
    if not crossed:  # inside the band, not called: the log change must reach t · se
        if log_se is None or alpha is None or not math.isfinite(log_se) or change <= -100:
            return None
        shift = abs(math.log1p(change / 100))
        if shift == 0:
            return None
        df = log_df if log_df is not None and math.isfinite(log_df) else 1e6
        t = float(special.stdtrit(min(df, 1e6), 1 - alpha / 2))
        need = max(need, n * (t * log_se / shift) ** 2)
    return max(n + 1, math.ceil(need - 1e-9))
