"""Findings: only claims the verdicts support, each with its interval; otherwise "no clear difference"."""

import numpy as np
import pytest

from protolab.analysis.findings import (
    MIN_OUTLIER_REPEATS,
    findings,
    measured_metrics,
    outlier_findings,
    study_rows,
    verdicts,
)
from protolab.analysis.stats import HIGHER, LOWER, NO_CLEAR_DIFFERENCE, NOT_TESTED
from protolab.plan.coordinates import Point
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.results.synthetic import telemetry_for


def at(load: int) -> Point:
    """The point of load index ``load`` (a point's label does not take part in comparisons)."""
    return Point((("load", load),), "")


def rec(config, load, repeat, iops, lat=100.0, workload="w4k", baseline="base", extra=None):
    """A synthetic record: `load` 0, 1, … is 1 host × (load+1) streams × 4 OIO."""
    d = DirectionResult(ios=int(iops), iops=iops, bins_ns={int(lat * 1000): 90, int(lat * 3000): 10})
    res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(), lat_mean_us=lat,
                     percentiles_us={"p50": lat, "p99": lat * 3}, jobs=1, runtime_s=2.0, errors=0)
    telemetry = telemetry_for(int(iops), **extra) if extra else None
    return CellRecord(telemetry=telemetry, run_id="r", seq=repeat, cell_id=f"{workload}__{config}__{load}__r{repeat}",
                      workload=workload, configuration=config, baseline=config == baseline, load_index=load,
                      hosts=1, streams_per_host=load + 1, oio_per_stream=4, total_oio=4 * (load + 1),
                      repeat=repeat, started="", ended="", result=res, raw_output="", job_file="")


def noisy(center, n, cv=0.005, seed=1):
    return list(np.random.default_rng(seed).normal(center, center * cv, n))


def study(spec, n=8, loads=(0, 1)):
    """spec: config → (iops multiplier, latency multiplier) per load point (tuple per load) or constant."""
    out = []
    for c, (im, lm) in spec.items():
        for li in loads:
            i_mul = im[li] if isinstance(im, tuple) else im
            l_mul = lm[li] if isinstance(lm, tuple) else lm
            for k, (iops, lat) in enumerate(zip(noisy(10000 * i_mul, n, seed=li * 7 + sum(map(ord, c))),
                                                noisy(100 * l_mul, n, seed=li * 11 + 3))):
                out.append(rec(c, li, k + 1, iops, lat))
    return out


def test_called_difference_states_size_and_interval_at_every_load_point():
    recs = study({"base": (1.0, 1.0), "fast": (1.2, 0.7)})
    rows = study_rows(recs, "base")
    vs = verdicts(rows, "base", ["iops", "lat_mean_us"])
    assert {v.verdict for k, v in vs.items() if k[0] == "iops"} == {HIGHER}
    assert {v.verdict for k, v in vs.items() if k[0] == "lat_mean_us"} == {LOWER}
    iops = vs[("iops", "w4k", at(0), "fast")]
    assert iops.ratio == pytest.approx(1.2, rel=0.02) and iops.ci_low > 1.02
    texts = [f.text for f in findings(rows, vs, "base", ["iops", "lat_mean_us"]) if f.kind == "difference"]
    assert len(texts) == 2
    iops_text = next(t for t in texts if "IOPS" in t)
    # "w4k: fast had 20 % (18–22 %) more IOPS than base at every load point."
    assert iops_text.startswith("w4k: fast had 2") and "more IOPS than base at every load point" in iops_text
    lo, hi = iops_text.split("(")[1].split(" %)")[0].split("–")
    assert 15 < float(lo) <= 20 <= float(hi) < 25
    lat_text = next(t for t in texts if "service time" in t)
    assert "lower average service time than base at every load point" in lat_text and lat_text.count("30 %") == 1


def test_within_sentence_needs_the_equivalence_test():
    # equal samples (0.5 % noise, 8 repeats): the equivalence test at the ±2 % band passes -> "within"
    recs = study({"base": (1.0, 1.0), "a": (1.0, 1.0), "b": (1.0, 1.0)})
    rows = study_rows(recs, "base")
    vs = verdicts(rows, "base", ["iops"])
    assert {v.verdict for v in vs.values()} == {NO_CLEAR_DIFFERENCE} and all(v.equivalent for v in vs.values())
    found = findings(rows, vs, "base", ["iops"])
    [within] = [f for f in found if f.kind == "within"]
    assert within.text.startswith("w4k: All configurations within ±2 % of base in IOPS at every load point "
                                  "(equivalence test: two one-sided Welch tests on log values")
    assert not [f for f in found if f.kind == "difference"]
    # the same medians with 8 % noise: narrow enough intervals are not enough, the equivalence test fails
    wide = [rec(c, li, k + 1, v) for c in ("base", "a") for li in (0,)
            for k, v in enumerate(noisy(10000, 4, cv=0.08, seed=len(c)))]
    rows = study_rows(wide, "base")
    vs = verdicts(rows, "base", ["iops"])
    assert not any(v.equivalent for v in vs.values())
    found = findings(rows, vs, "base", ["iops"])
    assert not [f for f in found if f.kind == "within"]
    assert [f.kind for f in found] == ["no clear difference"]
    # it says what it could have seen: the verdict's smallest detectable difference at its corrected α
    [v] = vs.values()
    assert v.alpha_tested == 0.05 and 0.08 < v.detectable < 0.6  # one comparison: α itself; 8 % noise, 4 repeats
    assert found[0].text.endswith(f"(smallest difference this run could have detected with 80 % power: "
                                  f"{100 * v.detectable:.0f} %).")
    assert found[0].detectable == (("iops", 100 * v.detectable, 100 * v.detectable, 0.05, 0.05),)
    assert found[0].detectable_pct == 100 * v.detectable


def test_two_repeats_are_not_tested_and_say_so():
    recs = study({"base": (1.0, 1.0), "fast": (3.0, 0.3)}, n=2)
    rows = study_rows(recs, "base")
    vs = verdicts(rows, "base", ["iops", "lat_mean_us"])
    assert {v.verdict for v in vs.values()} == {NOT_TESTED}
    assert {v.interval_name for v in vs.values()} == {"range of repeats"}
    found = findings(rows, vs, "base", ["iops", "lat_mean_us"])
    assert [f.kind for f in found] == ["not tested"]
    assert found[0].text == ("w4k: IOPS or average service time of fast against base: not tested "
                             "(2 repeats; 3 needed).")
    assert not any("no clear difference" in f.text or "95 %" in f.text for f in found)


def test_a_ten_percent_shift_with_five_repeats_is_called():
    recs = study({"base": (1.0, 1.0), "slow": (0.9, 1.0)}, n=5)
    rows = study_rows(recs, "base")
    vs = verdicts(rows, "base", ["iops"])
    assert {v.verdict for v in vs.values()} == {LOWER}
    assert {v.interval_name for v in vs.values()} == {"95 % CI"}
    [text] = [f.text for f in findings(rows, vs, "base", ["iops"]) if f.kind == "difference"]
    assert text.startswith("w4k: slow had 10 % (") and "fewer IOPS than base at every load point" in text


def test_mixed_load_points_name_where_the_difference_was_called():
    recs = study({"base": (1.0, 1.0), "x": ((1.0, 1.5), 1.0)})
    rows = study_rows(recs, "base")
    vs = verdicts(rows, "base", ["iops"])
    assert vs[("iops", "w4k", at(0), "x")].verdict == NO_CLEAR_DIFFERENCE
    assert vs[("iops", "w4k", at(1), "x")].verdict == HIGHER
    text = next(f.text for f in findings(rows, vs, "base", ["iops"]) if f.kind == "difference")
    # beside the "no clear difference": identical repeats, so only the ±2 % noise band limits what could be seen
    assert "more IOPS than base at 1×2×4=8; no clear difference at 1×1×4=4 (could have detected 2.0 %)." in text
    assert "every load point" not in text


def test_outliers_flagged_only_with_enough_repeats():
    vals = [1000, 1001, 999, 1002, 998, 1000, 700]
    recs = [rec("base", 0, i + 1, v) for i, v in enumerate(vals)]
    rows = study_rows(recs, "base")
    found = outlier_findings(rows, ["iops"])
    assert len(found) == 1 and "repeat 7 of 7 is an outlier" in found[0].text and "kept" in found[0].text
    few = study_rows([rec("base", 0, i + 1, v) for i, v in enumerate([1000, 1001, 700])], "base")
    assert MIN_OUTLIER_REPEATS > 3 and outlier_findings(few, ["iops"]) == []


def test_telemetry_metrics_are_absent_until_measured_then_compared():
    plain = study({"base": (1.0, 1.0), "a": (1.0, 1.0)}, n=3, loads=(0,))
    present, absent = measured_metrics(plain)
    assert present == ["iops", "lat_mean_us", "lat_p99_us", "mbps"]
    assert measured_metrics(rows=study_rows(plain, "base")) == (present, absent)  # the same from the rows
    assert "cpu_us_per_io_server" in absent and "packets_per_io" in absent
    cpu = [rec(c, 0, k + 1, 1000, extra={"cpu_us_per_io_server": s, "packets_per_io": 3.0})
           for c, base_cpu in (("base", 10.0), ("a", 8.0)) for k, s in enumerate(noisy(base_cpu, 8))]
    rows = study_rows(cpu, "base")
    assert measured_metrics(rows=rows) == measured_metrics(cpu)
    assert {"cpu_us_per_io_server", "packets_per_io"} <= set(measured_metrics(rows=rows)[0])
    a = next(r for r in rows if r.configuration == "a")
    assert a.relative["cpu_us_per_io_server"] == pytest.approx(80, abs=1.5)
    assert a.relative["packets_per_io"] == pytest.approx(100)
    vs = verdicts(rows, "base", ["cpu_us_per_io_server"])
    text = next(f.text for f in findings(rows, vs, "base", ["cpu_us_per_io_server"]) if f.kind == "difference")
    assert "a had 20 % (" in text and "less server CPU per I/O than base" in text
