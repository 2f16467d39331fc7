"""Repeats, confidence intervals, comparisons against a baseline, significance and outliers.

The unit of replication is one whole measured window (DESIGN.md, "Statistics the
report may rely on"): every function here takes one value per repeat.

A difference between a configuration and its baseline is called only when
  1. each side has at least MIN_REPEATS (3) repeats,
  2. a two-sided test, corrected across the matrix (Holm by default,
     Benjamini–Hochberg on request), gives p < alpha, and
  3. the whole 95 % bootstrap interval of the ratio of medians lies outside the
     noise band [1 - noise, 1 + noise] (default ±2 %).
Otherwise the verdict is "no clear difference" — never a win.

The test is Welch's t-test on the logarithms of the values (throughput and
latency are ratio-scale, and a shift of x % is a shift of the log's mean).
Mann–Whitney is available too, but it cannot serve a study matrix: its smallest
two-sided p is 2/C(2n, n) — 0.1 for 3+3, 0.0079 for 5+5 — so after Holm over the
18 comparisons of a 7-configuration, 3-load-point study nothing could ever be
called. With fewer than 3 repeats per side no test is run (p = 1): two-and-two
can never be called significant, however large the shift looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from .detectable import as_percent, family_alpha, smallest_detectable, welch_se_df

HIGHER = "higher"
LOWER = "lower"
NO_CLEAR_DIFFERENCE = "no clear difference"
#: Too few repeats (or no baseline value) to run a test: said as such, never as "no clear difference".
NOT_TESTED = "not tested"

# hyperfine and Iglewicz & Hoaglin: modified z-score above 3.5 is an outlier.
OUTLIER_Z = 3.5
# 0.6745 is the 0.75 quantile of the standard normal: it makes MAD comparable to sigma.
_MAD_TO_Z = 0.6745
# Exact permutation p-values with ties are only affordable for small samples;
# C(16, 8) = 12 870 arrangements take well under a second.
_MAX_EXACT_ARRANGEMENTS = 13_000
_BOOTSTRAP_RESAMPLES = 4000
#: Fewer repeats than this on either side: no test is run, nothing is called.
MIN_REPEATS = 3
TESTS = ("welch", "mannwhitney")


@dataclass(frozen=True)
class Summary:
    """Median of repeats with a distribution-free confidence interval of the median."""

    n: int
    median: float
    ci_low: float
    ci_high: float
    ci_level: float  # the coverage actually achieved; below 0.95 only when n < 6
    mean: float
    stdev: float


@dataclass(frozen=True)
class Comparison:
    """One configuration against its baseline at the same workload and load point."""

    ratio: float  # median(other) / median(baseline)
    ci_low: float
    ci_high: float
    p_value: float  # uncorrected two-sided p (see ``test``); 1 when a side has fewer than MIN_REPEATS
    n_base: int
    n_other: int
    median_base: float
    median_other: float
    label: str = ""
    test: str = "welch"
    p_equivalence: float = 1.0  # TOST p that the ratio lies within the noise band; 1 when not testable
    log_se: float = math.nan  # Welch's standard error of the log medians' shift (analysis.detectable); NaN: no test
    log_df: float = math.nan  # and its degrees of freedom


@dataclass(frozen=True)
class Verdict:
    """The call on one comparison after correction for the number of comparisons."""

    label: str
    verdict: str  # "higher", "lower", "no clear difference" or "not tested"
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    reason: str
    equivalent: bool = False  # the equivalence test (TOST at the noise band, corrected) says "within the band"
    n_min: int = 0  # repeats on the smaller side
    #: "no clear difference" only: the smallest difference (a fraction, never below the noise band) this test
    #: could have called with 80 % power, and the corrected α it was tested at (analysis.detectable)
    detectable: float = math.nan
    alpha_tested: float = math.nan

    @property
    def interval_name(self) -> str:
        """What the interval is: a 95 % CI, or only the repeats' range when a side has fewer than 3 repeats."""
        return "95 % CI" if self.n_min >= MIN_REPEATS else "range of repeats"


def _as_array(samples: Sequence[float], what: str = "samples") -> np.ndarray:
    arr = np.asarray(samples, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what}: need at least one value")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: values must be finite, got {arr.tolist()}")
    return arr


def _median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int, float]:
    """0-based order-statistic ranks (lo, hi) bracketing the median, and their exact coverage.

    The number of samples below the true median is B ~ Binomial(n, 1/2), so
    trimming k values from each end, [x_(k), x_(n-1-k)] covers the median with
    probability 1 - 2 P(B <= k).  We trim as much as the level allows; if even
    min..max (k = 0) falls short, we return it with its lower coverage.
    """
    def coverage(k: int) -> float:
        return float(1.0 - 2.0 * special.bdtr(k, n, 0.5))

    k = 0
    while k + 1 < (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return k, n - 1 - k, coverage(k)


def summarise(samples: Sequence[float]) -> Summary:
    """Median, mean, stdev and a 95 % order-statistics (binomial) CI of the median.

    n >= 6: the exact distribution-free interval with coverage >= 95 %.
    3 <= n <= 5: min..max, whose coverage is below 95 % (75 %, 87.5 %, 93.75 %) and is
    reported in `ci_level`.  n < 3: the interval is NaN (too few repeats to bound a median).
    """
    arr = np.sort(_as_array(samples))
    n = int(arr.size)
    median = float(np.median(arr))
    mean = float(arr.mean())
    stdev = float(arr.std(ddof=1)) if n > 1 else math.nan
    if n < 3:
        return Summary(n, median, math.nan, math.nan, math.nan, mean, stdev)
    lo, hi, coverage = _median_ci_ranks(n)
    return Summary(n, median, float(arr[lo]), float(arr[hi]), coverage, mean, stdev)


def _has_ties(a: np.ndarray, b: np.ndarray) -> bool:
    both = np.concatenate([a, b])
    return np.unique(both).size < both.size


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value, exact whenever that is affordable.

    Without ties scipy's exact null distribution is used. With ties, an exact
    permutation test for small samples (the asymptotic tie-corrected formula is
    anti-conservative there), else the asymptotic test.
    """
    from scipy import stats as sps  # only here: scipy.stats is 0.6 s and 45 MiB to import

    x, y = _as_array(a, "a"), _as_array(b, "b")
    if not _has_ties(x, y):
        return float(sps.mannwhitneyu(x, y, method="exact").pvalue)
    if math.comb(x.size + y.size, x.size) <= _MAX_EXACT_ARRANGEMENTS:
        method = sps.PermutationMethod(n_resamples=np.inf)
        return float(sps.mannwhitneyu(x, y, method=method).pvalue)
    return float(sps.mannwhitneyu(x, y, method="asymptotic").pvalue)


def welch_log_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Welch t-test on log values; Mann–Whitney when a value is not positive."""
    x, y = _as_array(a, "a"), _as_array(b, "b")
    if (x <= 0).any() or (y <= 0).any():
        return mann_whitney_p(x, y)
    lx, ly = np.log(x), np.log(y)
    if np.ptp(lx) == 0 and np.ptp(ly) == 0:  # no spread at all: equal or certainly different
        return 1.0 if lx[0] == ly[0] else 0.0
    return _welch_p(lx, ly)


def _t_sf(t, df):
    """Survival function of Student's t (scipy.special's stdtr: what scipy.stats.t.sf computes)."""
    return special.stdtr(df, -np.asarray(t, dtype=float))


def _welch_p(lx: np.ndarray, ly: np.ndarray) -> float:
    """Two-sided Welch t-test p of two samples (scipy.stats.ttest_ind(equal_var=False), without its import)."""
    vx, vy = float(np.var(lx, ddof=1)) / lx.size, float(np.var(ly, ddof=1)) / ly.size
    se2 = vx + vy
    if se2 == 0.0:
        return math.nan
    t = (float(np.mean(lx)) - float(np.mean(ly))) / math.sqrt(se2)
    df = se2**2 / ((vx**2 / (lx.size - 1) if lx.size > 1 else 0.0) + (vy**2 / (ly.size - 1) if ly.size > 1 else 0.0))
    return float(min(1.0, 2.0 * _t_sf(abs(t), df)))


def tost_log_p(a: Sequence[float], b: Sequence[float], margin: float) -> float:
    """Two one-sided Welch tests on log values: p that b/a lies within [1 - margin, 1 + margin].

    H0 is "outside the band"; a small p supports equivalence. 1 when either side has fewer than
    MIN_REPEATS values or a value is not positive.
    """
    x, y = _as_array(a), _as_array(b)
    if min(x.size, y.size) < MIN_REPEATS or (x <= 0).any() or (y <= 0).any() or margin <= 0:
        return 1.0
    lx, ly = np.log(x), np.log(y)
    lo, hi = math.log(1.0 - margin), math.log(1.0 + margin)
    d = float(np.mean(ly) - np.mean(lx))
    vx, vy = float(np.var(lx, ddof=1)) / lx.size, float(np.var(ly, ddof=1)) / ly.size
    se = math.sqrt(vx + vy)
    if se == 0.0:
        return 0.0 if lo < d < hi else 1.0
    df = (vx + vy) ** 2 / ((vx**2 / (lx.size - 1) if vx else 0.0) + (vy**2 / (ly.size - 1) if vy else 0.0))
    p_low = float(_t_sf((d - lo) / se, df))  # H0: d <= lo
    p_high = float(_t_sf((hi - d) / se, df))  # H0: d >= hi
    return max(p_low, p_high)


def test_p(a: Sequence[float], b: Sequence[float], test: str = "welch") -> float:
    """The uncorrected two-sided p of ``test``; 1 when either side has fewer than MIN_REPEATS values."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if min(len(a), len(b)) < MIN_REPEATS:
        return 1.0
    return welch_log_p(a, b) if test == "welch" else mann_whitney_p(a, b)


def compare(
    baseline_samples: Sequence[float],
    other_samples: Sequence[float],
    *,
    label: str = "",
    seed: int = 0,
    resamples: int = _BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
    test: str = "welch",
    noise: float = 0.02,
) -> Comparison:
    """Ratio of medians (other / baseline) with a seeded percentile-bootstrap CI and the test's p.

    Each side is resampled with replacement independently; the interval is the
    (1-level)/2 .. (1+level)/2 percentiles of the resampled ratios. The seed is
    fixed so the same inputs give the same interval. A zero baseline median gives NaN.
    """
    base = _as_array(baseline_samples, "baseline samples")
    other = _as_array(other_samples, "other samples")
    med_b, med_o = float(np.median(base)), float(np.median(other))
    p = test_p(base, other, test)
    p_eq = tost_log_p(base, other, noise)
    se = df = math.nan
    if test == "welch" and min(base.size, other.size) >= MIN_REPEATS and (base > 0).all() and (other > 0).all():
        se_, df_ = welch_se_df(np.log(base)[None, :], np.log(other)[None, :])
        se, df = float(se_[0]), float(df_[0])
    if med_b == 0.0:
        nan = math.nan
        return Comparison(nan, nan, nan, p, base.size, other.size, med_b, med_o, label, test, p_eq, se, df)
    rng = np.random.default_rng(seed)
    # resampling a sorted copy is the same bootstrap; it lets `compare_many` read each resample's median
    # from the drawn positions alone, and so give exactly these numbers
    boot_b = np.median(rng.choice(np.sort(base), size=(resamples, base.size), replace=True), axis=1)
    boot_o = np.median(rng.choice(np.sort(other), size=(resamples, other.size), replace=True), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_o / boot_b
    ratios = ratios[np.isfinite(ratios)]
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(ratios, [tail, 100.0 - tail])
    return Comparison(med_o / med_b, float(lo), float(hi), p, base.size, other.size, med_b, med_o, label, test,
                      p_eq, se, df)


def adjust_p(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """Correct p-values for multiple comparisons: "holm" (step-down FWER) or "bh" (FDR).

    NaN p-values (a comparison that could not be tested) count as 1.
    """
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    m = p.size
    if m == 0:
        return []
    if method == "holm":
        order = np.argsort(p, kind="stable")
        scaled = p[order] * (m - np.arange(m))
        # Holm's adjusted p is monotone: once a hypothesis is kept, all larger p's are kept.
        adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
        adjusted = np.empty(m)
        adjusted[order] = adjusted_sorted
        return adjusted.tolist()
    if method in ("bh", "fdr_bh", "benjamini-hochberg"):
        from scipy import stats as sps

        return sps.false_discovery_control(p, method="bh").tolist()
    raise ValueError(f"unknown correction method {method!r}; choose 'holm' or 'bh'")


def decide(
    comparisons: Sequence[Comparison],
    *,
    alpha: float = 0.05,
    noise: float = 0.02,
    method: str = "holm",
) -> list[Verdict]:
    """Call each comparison "higher", "lower" or "no clear difference", corrected across the matrix.

    All comparisons passed together form one family for the correction. A call
    needs the corrected p < alpha AND the ratio CI entirely outside [1-noise, 1+noise].
    """
    adjusted = adjust_p([c.p_value for c in comparisons], method)
    adjusted_eq = adjust_p([c.p_equivalence for c in comparisons], method)
    tested_at = family_alpha(adjusted, alpha, method)
    band_lo, band_hi = 1.0 - noise, 1.0 + noise
    calls = []
    for c, p_adj, p_eq in zip(comparisons, adjusted, adjusted_eq):
        where = f"ratio {c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"
        test = f"p = {c.p_value:.3g}, {method}-corrected {p_adj:.3g} over {len(comparisons)}"
        n_min = min(c.n_base, c.n_other)
        equivalent = False
        if math.isnan(c.ratio):
            call, reason = NOT_TESTED, "not tested: the baseline's median is zero, so no ratio can be formed"
        elif n_min < MIN_REPEATS:
            call = NOT_TESTED
            reason = f"not tested ({n_min} repeat{'s' if n_min != 1 else ''}; {MIN_REPEATS} needed)"
        elif p_adj >= alpha:
            call = NO_CLEAR_DIFFERENCE
            reason = f"{test} is not below {alpha}"
            equivalent = p_eq < alpha
            if equivalent:
                reason += (f"; within ±{noise:.0%} by the equivalence test (TOST, {method}-corrected "
                           f"p = {p_eq:.3g})")
        elif c.ci_low > band_hi:
            call, reason = HIGHER, f"{where} lies above the ±{noise:.0%} noise band; {test}"
        elif c.ci_high < band_lo:
            call, reason = LOWER, f"{where} lies below the ±{noise:.0%} noise band; {test}"
        else:
            call = NO_CLEAR_DIFFERENCE
            reason = f"{where} overlaps the ±{noise:.0%} noise band, although {test}"
        calls.append((c, call, p_adj, reason, equivalent, n_min))
    # the noncentral t's inverse is most of a report's statistics time: only a "no clear difference" needs it
    seen = np.full(len(calls), math.nan)
    at = [i for i, k in enumerate(calls) if k[1] == NO_CLEAR_DIFFERENCE]
    if at:
        seen[at] = as_percent(smallest_detectable([calls[i][0].log_se for i in at], [calls[i][0].log_df for i in at],
                                                  tested_at), noise) / 100.0
    return [Verdict(c.label, call, c.ratio, c.ci_low, c.ci_high, c.p_value, p_adj, reason, equivalent, n_min,
                    float(mdd) if math.isfinite(mdd) else math.nan, tested_at if math.isfinite(mdd) else math.nan)
            for (c, call, p_adj, reason, equivalent, n_min), mdd in zip(calls, seen)]


def modified_z(samples: Sequence[float]) -> np.ndarray:
    """Modified z-scores 0.6745 (x - median) / MAD (Iglewicz & Hoaglin).

    If MAD is zero (more than half the values identical) the mean absolute
    deviation scaled by 1.2533 stands in; if that is zero too, all scores are 0.
    """
    arr = _as_array(samples)
    med = np.median(arr)
    mad = float(np.median(np.abs(arr - med)))  # the median absolute deviation, unscaled
    if mad > 0:
        return _MAD_TO_Z * (arr - med) / mad
    mean_ad = float(np.mean(np.abs(arr - med)))
    if mean_ad > 0:
        # 1.2533 = sqrt(pi/2) makes the mean absolute deviation comparable to sigma.
        return (arr - med) / (1.253314 * mean_ad)
    return np.zeros_like(arr)


def outliers(samples: Sequence[float], *, threshold: float = OUTLIER_Z) -> list[int]:
    """Indices of samples whose |modified z-score| exceeds `threshold` (3.5, as hyperfine). Nothing is dropped."""
    if len(samples) < 3:
        return []  # with one or two values there is no "rest" to stand out from
    z = modified_z(samples)
    return [int(i) for i in np.flatnonzero(np.abs(z) > threshold)]


def outlier_advice(samples: Sequence[float], *, what: str = "repeat", threshold: float = OUTLIER_Z) -> list[str]:
    """One line of advice per outlier, e.g. "repeat 3 of 5 is an outlier (modified z = 5.1): …"."""
    flagged = outliers(samples, threshold=threshold)
    if not flagged:
        return []
    z = modified_z(samples)
    n = len(samples)
    return [
        f"{what} {i + 1} of {n} is an outlier (value {samples[i]:.6g}, modified z = {z[i]:.1f}): "
        "it is kept in the statistics; look for background load or a warm-up that was too short, "
        "or rerun with more repeats"
        for i in flagged
    ]
