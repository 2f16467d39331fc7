"""Statistics over repeats: medians, ratio CIs, corrected significance, outliers."""

import json
import math
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protolab.analysis.stats import (
    HIGHER,
    LOWER,
    NO_CLEAR_DIFFERENCE,
    NOT_TESTED,
    adjust_p,
    compare,
    decide,
    mann_whitney_p,
    modified_z,
    outlier_advice,
    outliers,
    summarise,
    tost_log_p,
)


def _low_noise(center: float, n: int, cv: float = 0.005, seed: int = 1) -> list[float]:
    return list(np.random.default_rng(seed).normal(center, center * cv, n))


def test_summarise_uses_order_statistics_for_the_median_ci():
    # n = 9: B ~ Bin(9, 1/2); trimming one value from each end covers the median
    # with 1 - 2 P(B <= 1) = 1 - 2 * 10/512 = 0.9609; trimming two gives 0.82 < 0.95.
    s = summarise([9, 1, 8, 2, 7, 3, 6, 4, 5])
    assert (s.n, s.median, s.ci_low, s.ci_high) == (9, 5.0, 2.0, 8.0)
    assert s.ci_level == pytest.approx(1 - 2 * 10 / 512)
    assert s.mean == 5.0 and s.stdev == pytest.approx(math.sqrt(7.5))


def test_summarise_small_samples():
    five = summarise([10, 12, 11, 13, 9])
    assert (five.ci_low, five.ci_high) == (9.0, 13.0)  # min..max
    assert five.ci_level == pytest.approx(1 - 2 * 0.5**5)  # 0.9375, below 95 %, and said so
    two = summarise([10, 12])
    assert two.median == 11.0 and math.isnan(two.ci_low) and math.isnan(two.ci_high)


def test_identical_samples_are_no_clear_difference():
    c = compare([1000.0] * 5, [1000.0] * 5)
    assert c.ratio == 1.0 and c.ci_low == 1.0 and c.ci_high == 1.0
    assert c.p_value == pytest.approx(1.0)
    [v] = decide([c])
    assert v.verdict == NO_CLEAR_DIFFERENCE


def test_ten_percent_shift_with_low_noise_is_called_both_ways():
    base = _low_noise(1000, 5, seed=1)
    faster = _low_noise(1100, 5, seed=2)
    slower = _low_noise(900, 5, seed=3)
    up, down = compare(base, faster, label="up"), compare(base, slower, label="down")
    assert up.test == "welch" and up.p_value < 1e-6 and down.p_value < 1e-6
    mw = compare(base, faster, label="up", test="mannwhitney")
    # 5 + 5 fully separated: the exact two-sided Mann–Whitney p is 2 / C(10, 5) = 2/252.
    assert mw.p_value == pytest.approx(2 / 252)
    up, down = mw, compare(base, slower, label="down", test="mannwhitney")
    assert up.ratio == pytest.approx(1.10, abs=0.02) and up.ci_low > 1.02
    assert down.ratio == pytest.approx(0.90, abs=0.02) and down.ci_high < 0.98
    # Two comparisons, Holm: 2 * 2/252 = 0.0159 < 0.05 for both.
    v_up, v_down = decide([up, down])
    assert (v_up.verdict, v_down.verdict) == (HIGHER, LOWER)
    assert v_up.p_adjusted == pytest.approx(4 / 252)


@settings(max_examples=200, deadline=None)
@given(
    base=st.lists(st.floats(1.0, 1e6), min_size=2, max_size=2),
    shift=st.floats(0.01, 100.0),
    noise=st.floats(0.0, 0.01),
)
def test_two_repeats_per_side_are_never_significant(base, shift, noise):
    other = [b * shift * (1 + noise * (-1) ** i) for i, b in enumerate(base)]
    c = compare(base, other)
    # The smallest two-sided p that 2 + 2 values can give is 2 / C(4, 2) = 1/3.
    assert c.p_value >= 1 / 3 - 1e-12
    [v] = decide([c])
    assert v.verdict == NOT_TESTED and v.verdict != NO_CLEAR_DIFFERENCE
    assert v.reason == "not tested (2 repeats; 3 needed)" and v.interval_name == "range of repeats"


def test_one_percent_shift_without_noise_stays_inside_the_noise_band():
    base = _low_noise(1000, 10, cv=0.0005, seed=4)
    other = _low_noise(1010, 10, cv=0.0005, seed=5)
    c = compare(base, other)
    assert c.p_value < 1e-4  # the test alone would call it
    assert 1.005 < c.ci_low and c.ci_high < 1.015  # but the interval is inside ±2 %
    [v] = decide([c])
    assert v.verdict == NO_CLEAR_DIFFERENCE
    assert "noise band" in v.reason


def test_holm_correction_changes_a_borderline_call():
    base = _low_noise(1000, 5, seed=6)
    one = compare(base, _low_noise(1100, 5, seed=7), test="mannwhitney")
    assert decide([one])[0].verdict == HIGHER  # p = 0.0079 alone
    many = [compare(base, _low_noise(1100, 5, seed=10 + i), test="mannwhitney") for i in range(10)]
    holm = decide(many)
    # Holm over 10: the smallest p is multiplied by 10 -> 0.079 > 0.05.
    assert all(v.verdict == NO_CLEAR_DIFFERENCE for v in holm)
    assert holm[0].p_adjusted == pytest.approx(10 * 2 / 252)
    # Benjamini–Hochberg with ten equal p's leaves them at 0.0079: all called.
    assert all(v.verdict == HIGHER for v in decide(many, method="bh"))


def test_adjust_p_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06.
    assert adjust_p(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: p_(i) * 4 / i = 0.02, 0.02, 0.04, 0.04 (already monotone).
    assert adjust_p(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_p([float("nan")], "holm") == [1.0]
    with pytest.raises(ValueError):
        adjust_p(p, "bonferroni-ish")


def test_ratio_ci_contains_the_true_ratio_and_is_reproducible():
    rng = np.random.default_rng(42)
    base = rng.normal(100.0, 2.0, 20)
    other = rng.normal(120.0, 2.4, 20)
    c = compare(base, other, seed=3)
    assert c.ci_low < 1.2 < c.ci_high
    assert c.ci_high - c.ci_low < 0.05
    assert compare(base, other, seed=3) == c  # fixed seed: identical interval


def test_zero_baseline_gives_no_ratio():
    c = compare([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    assert math.isnan(c.ratio)
    assert decide([c])[0].verdict == NOT_TESTED
    assert "baseline's median is zero" in decide([c])[0].reason


def test_ties_use_an_exact_permutation_p():
    # The asymptotic tie-corrected formula would give 0.004 here; the exact answer is 2/252.
    assert mann_whitney_p([1.0] * 5, [2.0] * 5) == pytest.approx(2 / 252)


def test_results_are_json_serialisable():
    c = compare([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], label="iscsi mtu9000 @ 4 oio")
    text = json.dumps([asdict(summarise([1, 2, 3])), asdict(c), asdict(decide([c])[0])])
    assert "iscsi mtu9000" in text


def test_outliers_flagged_with_advice_not_dropped():
    samples = [100.0, 101.0, 99.0, 100.0, 100.5, 140.0]
    assert outliers(samples) == [5]
    # median (100 + 100.5)/2 = 100.25; |deviations| sorted 0.25 0.25 0.25 0.75 1.25 39.75,
    # so MAD = (0.25 + 0.75)/2 = 0.5 and z = 0.6745 * 39.75 / 0.5 = 53.6
    assert modified_z(samples)[5] == pytest.approx(0.6745 * 39.75 / 0.5)
    [advice] = outlier_advice(samples)
    assert advice.startswith("repeat 6 of 6 is an outlier (value 140, modified z = 53.6)")
    assert "rerun with more repeats" in advice
    assert summarise(samples).n == 6  # kept in the statistics


def test_outliers_when_mad_is_zero_and_when_nothing_stands_out():
    # MAD = 0; mean absolute deviation 0.8 stands in: z = 4 / (1.2533 * 0.8) = 3.99
    assert outliers([5.0, 5.0, 5.0, 5.0, 9.0]) == [4]
    assert outliers([5.0, 5.0, 5.0]) == []
    assert outliers([100.0, 102.0, 98.0, 101.0, 99.0]) == []
    assert outliers([1.0, 100.0]) == []


def test_a_study_matrix_with_three_repeats_can_call_a_clear_difference():
    """18 comparisons (6 configurations × 3 load points), 3 repeats, a 10 % shift at 1 % noise: Welch on logs
    with Holm calls every one; Mann–Whitney never could (its smallest p, 0.1, is above α before correction)."""
    base = [_low_noise(1000, 3, cv=0.01, seed=100 + i) for i in range(18)]
    other = [_low_noise(1100, 3, cv=0.01, seed=200 + i) for i in range(18)]
    welch = decide([compare(b, o) for b, o in zip(base, other)])
    assert all(v.verdict == HIGHER for v in welch), [v.reason for v in welch if v.verdict != HIGHER]
    mw = decide([compare(b, o, test="mannwhitney") for b, o in zip(base, other)])
    assert all(v.verdict == NO_CLEAR_DIFFERENCE for v in mw)
    # and identical configurations stay uncalled under Welch too
    same = decide([compare(b, _low_noise(1000, 3, cv=0.01, seed=300 + i)) for i, b in enumerate(base)])
    assert all(v.verdict == NO_CLEAR_DIFFERENCE for v in same)


def test_three_repeats_is_the_least_that_is_tested():
    c2 = compare([100.0, 101.0], [200.0, 201.0])
    c3 = compare([100.0, 101.0, 100.5], [200.0, 201.0, 200.5])
    assert c2.p_value == 1.0 and decide([c2])[0].reason == "not tested (2 repeats; 3 needed)"
    assert c3.p_value < 1e-4 and decide([c3])[0].verdict == HIGHER


def test_equivalence_test_at_the_noise_band():
    same = [1000.0, 1003.0, 998.0, 1001.0, 999.0]
    close = [1001.0, 1002.0, 999.0, 1000.0, 1003.0]
    assert tost_log_p(same, close, 0.02) < 0.001  # within ±2 %, tightly
    assert tost_log_p(same, [1.10 * x for x in same], 0.02) > 0.5  # 10 % off: not within
    assert tost_log_p(same[:2], close[:2], 0.02) == 1.0  # two repeats: no test
    noisy = [900.0, 1100.0, 1000.0]
    assert tost_log_p(noisy, noisy[::-1], 0.02) > 0.05  # equal medians, but too noisy to say "within"
