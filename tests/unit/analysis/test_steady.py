"""Steady state after SNIA PTS: range <= 20 % and fitted excursion <= 10 % of the mean."""

import numpy as np
import pytest

from protolab.analysis.steady import find_steady_window, first_steady_index, steady_state


def test_flat_noisy_series_is_steady():
    rng = np.random.default_rng(0)
    series = 10_000 * (1 + rng.uniform(-0.03, 0.03, 30))
    v = steady_state(series, window=5)
    assert v.steady
    assert v.window_start == 25 and v.window == 5
    assert v.range_pct <= 6.5  # at most 2 * 3 % of a mean near 10 000
    assert v.excursion_pct < 10.0


def test_ramp_is_not_steady_and_reports_the_excursion():
    # 1000, 1050, …, 1200: mean 1100; range 200 / 1100 = 18.2 % passes the 20 % test,
    # but the fitted slope is 50 per sample, excursion 50 * 4 = 200 = 18.2 % > 10 %.
    v = steady_state([1000, 1050, 1100, 1150, 1200], window=5)
    assert not v.steady
    assert v.range_pct == pytest.approx(200 / 1100 * 100)
    assert v.excursion_pct == pytest.approx(200 / 1100 * 100)
    assert "rising" in v.reason and "excursion 18.2 %" in v.reason


def test_noisy_but_flat_window_fails_on_range_only():
    # mean 1000, range 300 = 30 %; the series is symmetric about its middle, so the fitted slope is 0, so only range fails.
    v = steady_state([850, 1150, 1000, 1150, 850], window=5)
    assert not v.steady
    assert v.range_pct == pytest.approx(30.0)
    assert v.excursion_pct == pytest.approx(0.0, abs=1e-9)
    assert "range 30.0 %" in v.reason


def test_series_that_settles_gives_the_first_steady_index():
    series = [100, 300, 600, 800, 1000, 1010, 990, 1005, 995, 1002]
    # window starting at 3: [800 … 1005], mean 961, range 210 = 21.9 % > 20 %: not yet.
    # window starting at 4: [1000, 1010, 990, 1005, 995], mean 1000, range 2 %,
    # slope = (-2*1000 - 1010 + 1005 + 2*995) / 10 = -1.5, excursion 6 = 0.6 %: steady.
    w = find_steady_window(series, window=5)
    assert w.steady and w.window_start == 4
    assert w.range_pct == pytest.approx(2.0)
    assert w.excursion_pct == pytest.approx(0.6)
    assert first_steady_index(series, window=5) == 8  # last sample of that window


def test_never_steady_and_too_short():
    assert first_steady_index([100, 200, 400, 800, 1600, 3200], window=5) is None
    short = steady_state([1, 1, 1], window=5)
    assert not short.steady and "needs a window of 5" in short.reason
    assert not steady_state([0, 0, 0, 0, 0]).steady
    with pytest.raises(ValueError):
        steady_state([1, 2, 3], window=1)
