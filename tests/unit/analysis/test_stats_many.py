"""compare_many gives exactly what compare gives, pair by pair (it only vectorises the work)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protolab.analysis.batch import compare_many
from protolab.analysis.stats import compare

FIELDS = ("ratio", "ci_low", "ci_high", "p_value", "p_equivalence", "median_base", "median_other", "n_base", "n_other",
          "log_se", "log_df")


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(1.0, abs(a))


def _pairs(seed: int) -> list[tuple[list[float], list[float]]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(200):
        nb, no = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        b = list(rng.normal(100, 5, nb))
        o = list(rng.normal(100 * float(rng.choice([0.9, 1.0, 1.1])), 5, no))
        if i % 17 == 0:
            b = [5.0] * nb  # no spread
        if i % 23 == 0:
            b = [0.0] * nb  # zero median: no ratio
        if i % 13 == 0 and nb > 1:
            b[0] = 0.0  # some resamples' median is zero: their ratios are dropped, as compare drops them
        if i % 29 == 0:
            o = [-1.0] + o[1:]  # not positive: Mann–Whitney fallback
        out.append((b, o))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_compare_many_equals_compare_for_every_pair(seed):
    pairs = _pairs(seed)
    many = compare_many(pairs, labels=[str(i) for i in range(len(pairs))], noise=0.02)
    assert len(many) == len(pairs)
    for i, ((b, o), m) in enumerate(zip(pairs, many)):
        one = compare(b, o, label=str(i), noise=0.02)
        assert m.label == str(i)
        for f in FIELDS:
            assert _same(float(getattr(one, f)), float(getattr(m, f))), (i, f, getattr(one, f), getattr(m, f))


def test_compare_many_of_nothing_is_empty():
    assert compare_many([]) == []


def test_ten_percent_shift_has_an_interval_around_it():
    (c,) = compare_many([([100.0, 101.0, 99.0, 100.5, 99.5], [110.0, 111.0, 109.0, 110.5, 109.5])])
    assert c.ratio == pytest.approx(1.10)
    assert 1.08 < c.ci_low < 1.10 < c.ci_high < 1.12
    assert c.p_value < 1e-5


def test_all_percentiles_in_one_pass_equal_each_percentile():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from protolab.analysis.latency import PERCENTILES, percentile, percentiles

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(st.integers(1, 10**9), st.integers(0, 1000), max_size=60))
    def check(bins):
        got = percentiles(bins)
        assert got == {f"p{p:g}": percentile(bins, p) for p in PERCENTILES}

    check()


def test_welch_and_tost_without_scipy_stats_equal_scipy_stats():
    """The report's tests use scipy.special (light to import); they equal scipy.stats' own functions."""
    from scipy import stats

    from protolab.analysis.stats import _t_sf, welch_log_p

    rng = np.random.default_rng(5)
    for _ in range(500):
        a = rng.lognormal(0, 0.1, int(rng.integers(3, 9)))
        b = rng.lognormal(0.05, 0.1, int(rng.integers(3, 9)))
        want = float(stats.ttest_ind(np.log(a), np.log(b), equal_var=False).pvalue)
        assert welch_log_p(a, b) == pytest.approx(want, rel=1e-10, abs=1e-15)
    for t, df in ((0.5, 2.0), (3.0, 4.7), (-1.2, 10.0)):
        assert float(_t_sf(t, df)) == pytest.approx(float(stats.t.sf(t, df)), rel=1e-12)


def test_report_analysis_does_not_import_scipy_stats():
    import subprocess
    import sys

    code = ("import sys; from protolab.report import tables; from protolab.analysis import pairs, compare; "
            "print('scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
