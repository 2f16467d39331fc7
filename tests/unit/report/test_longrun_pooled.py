"""Long runs in the findings: one sentence per workload, load point and configuration, its repeats pooled."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from scipy import stats

from conftest import DATA
from protolab.analysis.trend import PooledTrend, Trend, pooled_trend, slo_share, trend
from protolab.report import tables
from protolab.report.longrun_charts import LongRun, pooled_sentence
from protolab.results.records import SeriesRow
from protolab.results.rundir import RunDir


def _t(slope: float) -> Trend:
    return Trend(pct_per_h=slope, lo=slope - 0.5, hi=slope + 0.5, blocks=10, span_s=3600.0)


def test_three_repeats_pool_to_their_mean_with_an_interval_across_repeats():
    p = pooled_trend([_t(-1.4), _t(-1.2), _t(-1.0)])
    half = stats.t.ppf(0.975, 2) * 0.2 / np.sqrt(3)  # the slopes' sd is 0.2
    assert p.pct_per_h == pytest.approx(-1.2) and p.lo == pytest.approx(-1.2 - half)
    assert p.hi == pytest.approx(-1.2 + half) and (p.lowest, p.highest, p.repeats) == (-1.4, -1.0, 3)
    # two decimals: the interval is narrower than 1 %/h (as a single repeat's trend)
    assert p.clear is True and p.sentence() == ("−1.20 %/h over 3 repeats (95 % interval across repeats −1.70 to "
                                                "−0.70; repeats from −1.40 to −1.00)")


def test_repeats_that_disagree_in_sign_are_no_clear_change():
    p = pooled_trend([_t(-1.0), _t(0.5), _t(1.1)])
    assert p.tested and not p.clear and p.lo < 0 < p.hi
    assert p.sentence().startswith("no clear change over 3 repeats (+0.2 %/h, 95 % interval across repeats −")
    assert p.sentence().endswith("; repeats from −1.0 to +1.1)")


def test_two_repeats_give_their_mean_and_spread_and_are_not_tested():
    p = pooled_trend([_t(-1.4), _t(-1.0)])
    assert isinstance(p, PooledTrend) and not p.tested and not p.clear
    assert p.sentence() == "−1.20 %/h, the mean of 2 repeats (repeats from −1.40 to −1.00; not tested: fewer than 3 " \
                           "repeats)"
    assert pooled_trend([]) is None


def _run(repeat: int, slope_per_h: float, over: int, n: int = 40) -> LongRun:
    """A synthetic long run: n intervals of 60 s whose IOPS fall by ``slope_per_h`` % of 1,000 per hour; the first
    ``over`` intervals' p95 exceeds 20 ms."""
    t = [60.0 * (k + 1) for k in range(n)]
    iops = [1000.0 * (1 + slope_per_h / 100 * s / 3600) for s in t]
    rows = [SeriesRow(seq=repeat, cell_id=f"c{repeat}", phase="measure", host="all", t_s=s, iops=v,
                      lat_p95_us=30_000.0 if k < over else 5_000.0) for k, (s, v) in enumerate(zip(t, iops))]
    return LongRun("w", "nbd", 0, "1×1×4=4", repeat, False, rows, None, trend(t, iops),
                   slo_share([r.lat_p95_us for r in rows], "p95", 20_000.0))


def test_a_cells_repeats_make_one_sentence():
    runs = [_run(1, -2.4, 2), _run(2, -2.0, 4), _run(3, -1.6, 0)]
    said = pooled_sentence(runs, 5)
    want = pooled_trend([r.trend for r in runs])
    assert want is not None and want.clear and want.pct_per_h == pytest.approx(-2.0, abs=0.05)
    assert said == ("w, long run of nbd at 1×1×4=4 (3 repeats of 40 intervals over 40.0 min): IOPS never steady by "
                    f"the SNIA rule over 5 intervals in any repeat; IOPS change {want.sentence()}; p95 over 20 ms in 6 "
                    "of 120 intervals of the 3 repeats (5.0 %; per repeat 0.0–10.0 %)")
    # one repeat: its own sentence, as before
    assert pooled_sentence(runs[:1], 5) == runs[0].sentence(5)


def test_the_stored_exchange_run_says_one_long_run_sentence_per_workload_and_configuration(tmp_path):
    run = tmp_path / "exchange"
    shutil.copytree(DATA / "golden" / "exchange-quick" / "run", run)
    rd = RunDir.open(run)
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    said = [f for f in data.findings if f.kind == "long run"]
    # 2 workloads × 4 configurations, 3 repeats each (24 windows)
    assert len(rd.records()) == 24 and len(said) == 8
    assert {(f.workload, f.configurations) for f in said} == {
        (w, (c,)) for w in ("exchange-heavy", "exchange-double-heavy")
        for c in ("local", "iscsi-1x1g", "nfs-1x1g", "iscsi-4x1g")}
    assert all(" (3 repeats of " in f.text and " intervals of the 3 repeats (" in f.text for f in said)


def test_an_agings_sentence_gives_the_change_per_hour_it_could_have_detected():
    import dataclasses

    from protolab.analysis.claimpower import trend_mdd

    runs = [dataclasses.replace(_run(k, s, 0), aging=True) for k, s in ((1, -2.4), (2, -2.0), (3, -1.6))]
    said = pooled_sentence(runs, 5)
    p = pooled_trend([r.trend for r in runs])
    # across 3 repeats' slopes: se = half-width / t(0.975, 2), 2 df
    could = trend_mdd(p.lo, p.hi, 2, 1.0)
    assert said.startswith("w, aging of nbd") and could is not None and 0.3 < could < 3
    assert said.endswith(f"; it could have detected a change of ±{could:.1f} %/h (80 % power); p95 over 20 ms in 0 "
                         "of 120 intervals of the 3 repeats (0.0 %)")
    # one repeat: its fitted line's interval, blocks − 2 df (a noisy line: ±0.5 %/h at 95 % from 10 blocks)
    noisy = dataclasses.replace(runs[0], trend=_t(-2.4))
    could = trend_mdd(-2.9, -1.9, 8, 1.0)
    assert 0.5 < could < 1.0
    assert f"10 blocks; it could have detected a change of ±{could:.1f} %/h (80 % power)" in noisy.sentence(5)
    assert "could have detected" not in pooled_sentence([_run(1, -2.4, 0)], 5)  # a long run, not an aging
