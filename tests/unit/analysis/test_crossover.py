"""analysis.crossover: the claim's outcome at a point from its interval, the model's prediction and its saturation
bound, the added time per I/O, the sentences (never a word between measured values), and cells.csv rows."""

from __future__ import annotations

import math
import re

import pytest

from protolab.analysis.crossover import (
    DEFAULT_BAND_PCT,
    FAILS,
    HOLDS,
    NOT_TESTED,
    UNDECIDED,
    AtPoint,
    Obs,
    added_times,
    band_of,
    cost_at,
    crossover,
    matters_below_us,
    outcome,
    parallelism_of,
    predicted_ratio,
    sentence,
)


@pytest.mark.parametrize("ratio, lo, hi, n, want", [
    (0.97, 0.93, 1.02, 3, HOLDS), (0.95, 0.90, 0.99, 3, UNDECIDED), (0.80, 0.70, 0.90, 3, FAILS),
    (1.20, 1.10, 1.30, 3, FAILS), (1.0, 1.0, 1.0, 2, NOT_TESTED), (math.nan, math.nan, math.nan, 3, NOT_TESTED),
])
def test_the_claim_holds_only_when_the_whole_interval_is_inside_the_band(ratio, lo, hi, n, want):
    assert outcome(ratio, lo, hi, n, 0.09) == want


def test_the_prediction_is_the_latency_ratio_below_saturation_and_goes_to_one_above_it():
    # 1 OIO: (s + d) / (s + d + o)
    assert predicted_ratio(1500, 50, 250, 1, 32) == pytest.approx(1550 / 1800)
    assert predicted_ratio(0, 50, 250, 1, None) == pytest.approx(50 / 300)
    # N = 16 over P = 8 servers of 1 ms: both paths bounded by P / s, the protocol hidden
    assert predicted_ratio(1000, 50, 250, 16, 8) == pytest.approx(1.0)
    # N = 16 over P = 32: below saturation, the same ratio as at 1 OIO
    assert predicted_ratio(1000, 50, 250, 16, 32) == pytest.approx(1050 / 1300)
    assert matters_below_us(250, 0.09) == pytest.approx(250 * 0.91 / 0.09)  # 2,528 µs
    assert cost_at(250, 5500 + 50) == pytest.approx(250 / 5800)  # ~4 %


def _obs(c, axis, iops, lat, load="1×1×1=1", oio=1, total=1, w="w"):
    return Obs(w, c, axis, load, oio, total, iops, lat)


def _run(points):
    """Three repeats each: (configuration, axis) → (IOPS, latency) of each repeat."""
    out = []
    for (c, axis), reps in points.items():
        out += [_obs(c, axis, i, lat) for i, lat in reps]
    return out


def test_added_time_is_read_at_the_lowest_swept_value_at_1_oio_and_predicts_the_others():
    obs = _run({("direct", 0): [(20000, 50), (20100, 49), (19900, 51)],
                ("iscsi", 0): [(3330, 300), (3300, 302), (3360, 298)],
                ("direct", 1500): [(645, 1550), (640, 1552), (650, 1548)],
                ("iscsi", 1500): [(555, 1800), (550, 1805), (560, 1795)]})
    added = added_times(obs, "direct")
    a = added[("w", "iscsi")]
    assert (a.at_us, a.o_us, a.d_us, a.n) == (0, pytest.approx(250), pytest.approx(50), 3)
    assert a.lo_us < 250 < a.hi_us
    pts = crossover(obs, "direct", 0.09, parallelism=32, added=added)
    assert [(p.axis, p.outcome) for p in pts] == [(0, FAILS), (1500, FAILS)]
    at1500 = pts[1]
    assert at1500.predicted == pytest.approx(1550 / 1800) and at1500.ratio == pytest.approx(555 / 645)
    assert not at1500.saturated


def test_the_sentence_states_the_run_of_holds_from_the_top_and_every_other_measured_point():
    def p(axis, ratio, lo, hi, out, sat=False):
        return AtPoint("w", "iscsi", axis, "1×1×1=1", 1, ratio, lo, hi, 3, out, None, sat)

    pts = [p(150, 0.69, 0.62, 0.76, FAILS), p(500, 0.93, 0.89, 0.97, UNDECIDED), p(1500, 0.97, 0.94, 1.0, HOLDS),
           p(5500, 0.99, 0.96, 1.02, HOLDS)]
    assert sentence(pts, "direct", 0.09) == (
        "iscsi within 9 % of direct at every service time ≥ 1.5 ms measured; 31 % (24–38 %) fewer IOPS at 150 µs; "
        "undecided at 500 µs: 0.93 (0.89–0.97) × direct's IOPS, reaching across ±9 %.")
    assert sentence(pts[1:], "direct", 0.09).startswith("iscsi within 9 % of direct at every service time ≥ 1.5 ms")
    assert sentence([pts[0], pts[3]], "direct", 0.09) == (
        "iscsi within 9 % of direct at 5.5 ms, the highest measured; 31 % (24–38 %) fewer IOPS at 150 µs.")
    assert sentence(pts[2:], "direct", 0.09) == ("iscsi within 9 % of direct at every service time measured "
                                                 "(1.5 ms, 5.5 ms).")
    # a hold below a miss is said at its own value, never as a range
    mixed = [p(150, 0.97, 0.94, 1.0, HOLDS), p(500, 0.80, 0.75, 0.85, FAILS, sat=True)]
    assert sentence(mixed, "direct", 0.09) == ("iscsi within 9 % of direct at 150 µs; 20 % (15–25 %) fewer IOPS at "
                                               "500 µs (array saturated).")
    assert sentence([p(100, 1.0, 1.0, 1.0, NOT_TESTED)], "d", 0.09, "link_rate") == (
        "iscsi not tested at 100 Mbit/s (3 repeats; 3 needed).")


def test_saturation_is_flagged_where_the_baseline_reaches_90_percent_of_p_over_s():
    obs = _run({("direct", 1000): [(7300, 2190)] * 3, ("nfs", 1000): [(7000, 2280)] * 3})
    obs = [Obs(o.workload, o.configuration, o.axis, "1×4×4=16", 4, 16, o.iops, o.lat_mean_us) for o in obs]
    [pt] = crossover(obs, "direct", 0.09, parallelism=8)
    assert pt.saturated  # 7,300 ≥ 0.9 × 8 / 1 ms = 7,200


def test_cells_csv_rows_read_as_records_do_and_the_parallelism_comes_from_device_model():
    row = {"workload": "w", "configuration": "iscsi", "service_time": "150", "hosts": "1", "streams_per_host": "4",
           "oio_per_stream": "4", "total_oio": "16", "iops": "1000.5", "lat_mean_us": "16.0"}
    assert Obs.of_row(row) == Obs("w", "iscsi", 150, "1×4×4=16", 4, 16, 1000.5, 16.0)
    assert Obs.of_row({**row, "service_time": ""}).axis is None
    assert parallelism_of("500us ×64, no throughput cap, no cache") == 64 and parallelism_of("ram") is None


def test_the_band_is_the_seeds_iops_claim_else_the_plans_else_protolabs():
    from protolab.plan.load import load_builtin

    tr, _ = load_builtin("tr3808", "quick")
    band, said = band_of(tr)  # "within 9 % of FC": its 9 % (not the MTU pairs' ±5 %)
    assert band == pytest.approx(0.09) and said.startswith("the seed's claim") and re.search(r"\b9 ?%", said)
    a, _ = load_builtin("array-speed", "quick")
    assert band_of(a) == (0.09, "the plan's sweep.crossover_band")
    assert band_of(None) == (DEFAULT_BAND_PCT / 100, "protolab's default ±9 % (TR-3808's band; no claim given)")
