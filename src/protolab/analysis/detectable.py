"""The smallest difference a comparison could have detected: what a "no clear difference" could have seen.

For the test the report uses — Welch's two-sided t-test on log values — and the repeats' own spread, the
smallest true shift of the log medians that the test would call with `POWER` (80 %) probability at the α the
comparison was actually tested at. Computed with the noncentral t distribution (not the (t_{1-α/2} + t_power)
approximation): the noncentrality λ solves

    P(T' > t_{1-α/2}) + P(T' < -t_{1-α/2}) = power,   T' ~ noncentral t(df, λ),

and the shift is λ · se, where se and df are Welch's standard error and degrees of freedom from the two sides'
log values. As a ratio of medians that is e^(λ·se), so the figure (in %) is 100 · (e^(λ·se) − 1): the one median
that much above the other, either way round. The df used is the run's own Welch df; the test re-estimates it
from each new set of repeats, so with few repeats its true power at that size is a few points below 80 % (about
75 % at 5 + 5 repeats and α = 0.008, 71 % at 3 + 3; 80 % from about 8 a side): the figure errs small there.

The α the comparison was tested at is the correction's threshold for the next call in its family (`family_alpha`):
Holm's step-down with r of m hypotheses rejected calls a further one exactly when its p < α / (m − r); Benjamini–
Hochberg's step-up when p ≤ (r + 1) α / m. A call also needs the bootstrap interval outside the noise band, so no
difference inside the band is ever called: the figure given is never below the band (`floor`).

Welch's df is continuous, so a large study has thousands of distinct (df, α) pairs, and the noncentral t's inverse
costs about 0.25 ms each at a small α (2–3 s for a 10,000-window report). For one α with more than `_EXACT_UP_TO`
distinct df, λ is solved exactly at the Chebyshev points of that α's df range and read from the interpolating
polynomial of log λ in log df (degree `_DEGREE`): λ is smooth in df, and the figures agree with the exact solution
to within 1e-5 relatively (tests/unit/analysis/test_detectable.py) — far below the whole percent a report prints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

POWER = 0.80
#: Welch's degrees of freedom above this are the normal's (nctdtrinc is unstable for huge df)
_MAX_DF = 1e6


def family_alpha(p_adjusted: Sequence[float], alpha: float, method: str = "holm") -> float:
    """The per-comparison α at which one more comparison of this family would be called (see the module text)."""
    m = len(p_adjusted)
    if m == 0:
        return alpha
    r = sum(1 for p in p_adjusted if p < alpha)
    if method == "holm":
        return alpha / (m - r) if r < m else alpha
    return alpha * min(r + 1, m) / m  # Benjamini–Hochberg


def smallest_detectable(se, df, alpha, power: float = POWER) -> np.ndarray:
    """The smallest shift of the log medians (natural log) Welch's two-sided test at ``alpha`` calls with
    ``power``, for standard errors ``se`` and degrees of freedom ``df`` (arrays or scalars; NaN where either is)."""
    se, df, alpha = np.broadcast_arrays(np.asarray(se, float), np.asarray(df, float), np.asarray(alpha, float))
    out = np.full(se.shape, np.nan)
    ok = np.isfinite(se) & ~np.isnan(df) & (df > 0) & (alpha > 0) & (alpha < 1)
    if not ok.any():
        return out
    d, a = np.minimum(df[ok], _MAX_DF), alpha[ok]
    lam = np.empty(d.shape)
    for one in np.unique(a):  # λ depends on df and α alone
        at = a == one
        lam[at] = _lambda_interpolated(d[at], float(one), power)
    out[ok] = lam * se[ok]
    return out


#: up to this many distinct df for one α, λ is solved at each; above it, at the Chebyshev points (see the module)
_EXACT_UP_TO = 64
_DEGREE = 48


def _lambda_interpolated(d: np.ndarray, alpha: float, power: float) -> np.ndarray:
    """λ for each df in ``d`` at one α: exactly for few distinct df, else by Chebyshev interpolation."""
    distinct, back = np.unique(d, return_inverse=True)
    if distinct.size <= _EXACT_UP_TO:
        return _lambda(distinct, np.full(distinct.size, alpha), power)[back]
    from numpy.polynomial import Chebyshev

    def log_lambda(log_df: np.ndarray) -> np.ndarray:
        return np.log(_lambda(np.exp(log_df), np.full(log_df.size, alpha), power))

    lo, hi = np.log(distinct[0]), np.log(distinct[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        poly = Chebyshev.interpolate(log_lambda, _DEGREE, domain=[lo, hi])
    if not np.all(np.isfinite(poly.coef)):  # the solver failed at a node: each df solved on its own, as before
        return _lambda(distinct, np.full(distinct.size, alpha), power)[back]
    return np.exp(poly(np.clip(np.log(d), lo, hi)))


def _lambda(d: np.ndarray, a: np.ndarray, power: float) -> np.ndarray:
    """The noncentrality λ at which Welch's two-sided test (df ``d``, level ``a``) has ``power``, solved exactly."""
    t_crit = special.stdtrit(d, 1.0 - a / 2.0)
    lam = special.nctdtrinc(d, 1.0 - power, t_crit)  # the upper tail alone holds the power
    below = np.zeros_like(lam)
    moved = np.arange(lam.size)  # where λ changed in the last step (at first: everywhere)
    for _ in range(3):  # the lower tail adds a little: a fixed point, converged in one or two steps
        now = np.nan_to_num(special.nctdtr(d[moved], lam[moved], -t_crit[moved]), nan=0.0)  # NaN far out: ~0
        # an unchanged λ or lower tail gives the very same inverse again: only the others are solved (same figures)
        changed = now != below[moved]
        moved, now = moved[changed], now[changed]
        if not moved.size:
            break
        below[moved] = now
        again = special.nctdtrinc(d[moved], 1.0 - power + now, t_crit[moved])
        same = again == lam[moved]
        lam[moved] = again
        moved = moved[~same]
    return lam


def approximate(se, df, alpha, power: float = POWER) -> np.ndarray:
    """The usual approximation (t_{1-α/2, df} + t_{power, df}) · se, for comparison with `smallest_detectable`."""
    se, df = np.asarray(se, float), np.minimum(np.asarray(df, float), _MAX_DF)
    return (special.stdtrit(df, 1.0 - np.asarray(alpha, float) / 2.0) + special.stdtrit(df, power)) * se


def as_percent(log_shift, floor: float = 0.0) -> np.ndarray:
    """A log shift as the % one median lies above the other (100 · (e^d − 1)), never below ``floor`` (a fraction:
    the noise band)."""
    return 100.0 * np.maximum(np.expm1(np.asarray(log_shift, float)), floor)


def welch_se_df(log_a: np.ndarray, log_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welch's standard error of the difference of means and its Welch–Satterthwaite degrees of freedom, for
    each row of two arrays of log values (rows: comparisons; columns: repeats)."""
    na, nb = log_a.shape[-1], log_b.shape[-1]
    va, vb = log_a.var(axis=-1, ddof=1) / na, log_b.var(axis=-1, ddof=1) / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (np.where(va > 0, va**2 / (na - 1), 0.0) + np.where(vb > 0, vb**2 / (nb - 1), 0.0))
    # no spread on either side: the test sees any shift at all (welch_log_p gives 0), so nothing is undetectable
    return np.sqrt(va + vb), np.where(va + vb > 0, df, np.inf)
