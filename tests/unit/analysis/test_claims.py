"""Seed claims judged from synthetic runs: each outcome (reproduced, not reproduced, opposite, inconclusive, not
testable here) with its words and figures, any-of metrics, MTU pairs, fill levels, time claims, and the reason
taken from the bottleneck analysis."""

from __future__ import annotations

import re

import numpy as np
import pytest

from protolab.analysis.bottleneck import Bottleneck
from protolab.analysis.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    OPPOSITE,
    REPRODUCED,
    claim_verdicts,
)
from protolab.analysis.trend import Trend
from protolab.errors import PlanError
from protolab.plan.coordinates import point_of
from protolab.plan.load import load_plan_text
from protolab.results.records import CellRecord, CellResult, DirectionResult

PLAN = """
name = "claims"
baseline = "base"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 1, oio = 4 }}, {{ streams = 2, oio = 4 }}]
[targets.t]
url = "/srv/x"
[[configurations]]
name = "base"
target = "t"
[[configurations]]
name = "other"
target = "t"
[[configurations]]
name = "third"
target = "t"
[[seed_findings]]
said = "The seed's words."
metric = {metric}
compare = "{compare}"
claims = [{claim}]
"""


def plan(claim: str, metric: str = '"iops"', compare: str = "baseline"):
    return load_plan_text(PLAN.format(claim=claim, metric=metric, compare=compare))


def rec(config, load, repeat, iops, lat=100.0):
    d = DirectionResult(ios=int(iops), iops=iops, bins_ns={int(lat * 1000): 100})
    res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(), lat_mean_us=lat,
                     percentiles_us={"p50": lat, "p99": lat * 3}, jobs=1, runtime_s=2.0, errors=0)
    return CellRecord(run_id="r", seq=repeat, cell_id=f"tr3808-4k__{config}__{load}__r{repeat}",
                      workload="tr3808-4k", configuration=config, baseline=config == "base", load_index=load,
                      hosts=1, streams_per_host=load + 1, oio_per_stream=4, total_oio=4 * (load + 1),
                      repeat=repeat, started="", ended="", result=res, raw_output="", job_file="")


def run(spec: dict[str, tuple[float, float]], n: int = 6, cv: float = 0.005):
    """spec: configuration → (IOPS multiplier, latency multiplier) at both load points."""
    out = []
    for c, (im, lm) in spec.items():
        for load in (0, 1):
            rng = np.random.default_rng(load * 7 + sum(map(ord, c)))
            for k in range(n):
                out.append(rec(c, load, k + 1, 10000 * im * (1 + rng.normal(0, cv)), 100 * lm * (1 + rng.normal(0, cv))))
    return out


def one(plan_, records, **kw):
    [v] = claim_verdicts(plan_, records, **kw)
    return v


def test_every_configuration_within_nine_percent_is_reproduced_with_its_figures():
    v = one(plan("{ at_least = -9 }"), run({"base": (1, 1), "other": (0.95, 1), "third": (0.97, 1)}))
    assert v.verdict == REPRODUCED and len(v.parts) == 4
    assert {p.outcome for p in v.parts} == {REPRODUCED}
    assert v.claim == "IOPS: every configuration against base: change ≥ −9.0 %"
    changes = sorted(p.change for p in v.parts)
    assert changes == pytest.approx([-5, -5, -3, -3], abs=1)
    assert v.figures.startswith(f"change −{-changes[0]:.1f} to −{-changes[-1]:.1f} % (intervals −")
    assert v.figures.endswith("over 4 comparisons: 4 reproduced") and v.reason == ""


def test_far_below_the_band_is_not_reproduced_and_the_reason_is_the_bottleneck_found():
    records = run({"base": (1, 1), "other": (0.5, 1), "third": (0.97, 1)})
    cells = {(r.workload, point_of(r), r.configuration) for r in records}
    held = {c: Bottleneck("cpu", "tgtd", None, None, None) if c[2] == "other" else Bottleneck("none", "", None, None,
                                                                                                None) for c in cells}
    v = one(plan("{ at_least = -9 }"), records, bottlenecks=held)
    assert v.verdict == NOT_REPRODUCED
    assert {(p.subject, p.outcome) for p in v.parts} == {("other", NOT_REPRODUCED), ("third", REPRODUCED)}
    assert "2 reproduced, 2 not reproduced" in v.figures and "−50" in v.figures
    assert v.reason == ("Where it was not reproduced, the bottleneck analysis found other by tgtd CPU (2 of 2 cells); "
                        "base by neither a CPU nor the wire (2 of 2 cells).")


def test_a_called_change_against_a_one_way_band_is_opposite():
    v = one(plan('{ subjects = ["other"], at_least = 10, at_most = 45 }'), run({"base": (1, 1), "other": (0.8, 1)}))
    assert v.verdict == OPPOSITE and {p.outcome for p in v.parts} == {OPPOSITE}
    assert all(p.why == "the test calls a change the other way" for p in v.parts)


def test_inside_a_one_way_band_and_called_is_reproduced():
    v = one(plan('{ subjects = ["other"], at_least = 10, at_most = 45 }'), run({"base": (1, 1), "other": (1.25, 1)}))
    assert v.verdict == REPRODUCED
    assert all(10 < p.low < p.change < p.high < 45 for p in v.parts)


def test_an_interval_across_the_edge_is_inconclusive():
    v = one(plan('{ subjects = ["other"], at_least = -9 }'), run({"base": (1, 1), "other": (0.91, 1)}, cv=0.04))
    assert v.verdict == INCONCLUSIVE
    assert all(p.low < -9 < p.high for p in v.parts)


def test_two_repeats_are_not_testable_and_say_why():
    v = one(plan("{ at_least = -9 }"), run({"base": (1, 1), "other": (0.95, 1), "third": (1, 1)}, n=2))
    assert v.verdict == NOT_TESTABLE and all(p.outcome == NOT_TESTABLE for p in v.parts)
    assert all(re.search(r"not tested \(2 repeats; 3 needed\)", p.why) for p in v.parts)
    assert v.figures.endswith("4 not testable here")


def test_a_configuration_without_records_is_not_testable():
    v = one(plan('{ subjects = ["third"], at_least = -9 }'), run({"base": (1, 1), "other": (1, 1)}))
    assert v.verdict == NOT_TESTABLE and v.parts == ()


def test_any_of_two_metrics_holds_on_either():
    p = plan('{ subjects = ["other"], reference = "third", metric = ["iops", "lat_p99_us"], better = true }')
    same_iops_lower_latency = run({"base": (1, 1), "third": (1, 1), "other": (1.0, 0.7)})
    v = one(p, same_iops_lower_latency)
    assert v.verdict == REPRODUCED and {pt.metric for pt in v.parts} == {"lat_p99_us"}
    assert "; p99 service time change −30 % (intervals −" in v.figures and v.figures.endswith("2 reproduced")
    assert v.figures.startswith("IOPS change ") and {pt.metric for pt in v.others} == {"iops"}  # shown, not decisive
    assert v.claim == "IOPS or p99 service time: other against third: more IOPS or lower p99 service time " \
                      "(a difference the test calls)"
    worse = one(p, run({"base": (1, 1), "third": (1, 1), "other": (0.8, 1.3)}))
    assert worse.verdict == OPPOSITE
    same = one(p, run({"base": (1, 1), "third": (1, 1), "other": (1, 1)}))
    assert same.verdict == NOT_REPRODUCED and all(pt.why.startswith("no clear difference") for pt in same.parts)
    assert all("within ±2% by the equivalence test" in pt.why for pt in same.parts)  # the data speak against it


def test_a_change_the_claims_way_that_the_test_cannot_call_is_inconclusive_not_against_it():
    p = plan('{ subjects = ["other"], reference = "third", worse = true }')
    noisy = run({"base": (1, 1), "third": (1, 1), "other": (0.85, 1)}, n=3, cv=0.15)
    v = one(p, noisy)
    assert v.verdict == INCONCLUSIVE, v
    for pt in v.parts:
        assert pt.outcome == INCONCLUSIVE and pt.low < 0, pt  # the interval reaches "fewer IOPS"
        assert pt.why.startswith("the interval reaches the claim's direction, but the test does not call it (p = ")
    assert v.figures.endswith("over 2 comparisons: 2 inconclusive")
    assert v.reason.startswith("Where it was inconclusive, the bottleneck analysis found other by unknown (2 of 2 cells)")


def test_time_claims_are_never_extrapolated():
    p = plan('{ worse = true, horizon = "24h" }', compare="time")
    short = {("tr3808-4k", "other"): [Trend(-5.0, -6.0, -4.0, 10, 600.0)]}
    v = one(p, [], trends=short)
    assert v.verdict == NOT_TESTABLE
    assert v.parts[0].why == ("this run's long run covers 0.17 h; the claim is about 24h (a trend is never "
                              "extrapolated)")
    long = {("tr3808-4k", "other"): [Trend(-1.0, -1.2, -0.8, 10, 90000.0)]}
    v = one(p, [], trends=long)
    assert v.verdict == REPRODUCED and v.parts[0].change == pytest.approx(-24.0)


def test_claims_naming_no_configuration_are_refused_in_one_line():
    with pytest.raises(PlanError, match=r"seed_findings.claims: nvme-\* names no configuration; choose from: base, "
                                        r"other, third"):
        plan('{ subjects = ["nvme-*"], at_least = -9 }')
    with pytest.raises(PlanError, match="exactly one of a band"):
        plan("{ at_least = -9, better = true }")
    with pytest.raises(PlanError, match="a finding with `untestable` has no claims"):
        load_plan_text(PLAN.format(claim="{ within = 5 }", metric='"iops"', compare="baseline").replace(
            'compare = "baseline"', 'compare = "baseline"\nuntestable = "no such thing here"'))


def test_every_built_in_studys_claims_are_data_that_load():
    from protolab.plan.load import load_builtin

    for name in ("tr3808", "exchange", "jumbo-vmtn", "tr3916-shared", "tr3916-vm", "emc-fill-aging"):
        p, _ = load_builtin(name, "quick")
        assert any(f.claims for f in p.seed_findings), name
        assert claim_verdicts(p, []) and all(v.verdict == NOT_TESTABLE for v in claim_verdicts(p, [])), name


def test_a_stored_plan_of_format_3_loses_its_typed_excuse_and_gains_no_claim():
    from protolab.plan.migrate import migrate

    stored = {"seed_findings": [{"said": "x", "metric": "iops", "here": "why this machine may differ"}]}
    assert migrate(stored, 3) == {"seed_findings": [{"section": None, "untestable": None, "claims": [], "said": "x",
                                                     "metric": "iops"}]}


def test_where_a_claim_did_not_hold_the_reason_gives_each_directions_latency_against_the_reference():
    """NFS's synchronous writes, say: the subject's reads +10 %, its writes +400 % against the reference's, from
    the records' own per-direction latencies (medians of repeats)."""
    def split(r, read_us, write_us):
        res = r.result
        read = res.read.model_copy(update={"lat_mean_us": read_us})
        write = DirectionResult(ios=res.read.ios // 3, iops=res.iops / 4, lat_mean_us=write_us)
        return r.model_copy(update={"result": res.model_copy(update={"read": read, "write": write})})

    records = [split(r, 110.0, 500.0) if r.configuration == "other" else split(r, 100.0, 100.0)
               for r in run({"base": (1, 1), "other": (0.5, 1)})]
    v = one(plan('{ subjects = ["other"], at_least = -9 }'), records)
    assert v.verdict == NOT_REPRODUCED
    assert v.reason.endswith("Mean latency per direction in those cells (reads, writes): other against base: "
                             "reads +10 %, writes +400 %."), v.reason


SWEPT = """
name = "swept"
baseline = "base"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1, oio = 4 }, { streams = 2, oio = 4 }]
[lab.storage]
model = "hdd-array"
[sweep]
service_time = ["500us", "5.5ms"]
[[configurations]]
name = "base"
target = "lab:local"
[[configurations]]
name = "other"
target = "lab:iscsi"
[[seed_findings]]
said = "All within 9 % of FC."
metric = "iops"
claims = [{ within = 9 }]
"""


def test_a_swept_plans_claims_are_judged_at_its_own_service_time_and_say_so():
    """At 500 µs the protocol is 40 % below the baseline (outside the band), at the plan's own 5.5 ms 3 % (inside):
    the seed's claim, judged at 5.5 ms only, is reproduced, and the words name where; judged over every swept value
    it would not be."""
    from protolab.analysis.claims import at_chosen, judged_at

    swept = load_plan_text(SWEPT)
    records = []
    for us, ratio in ((500, 0.6), (5500, 0.97)):
        for r in run({"base": (1, 1), "other": (ratio, 1)}):
            records.append(r.model_copy(update={"coords": {**r.coords, "service_time": us}}))
    v = one(swept, records)
    assert v.verdict == REPRODUCED and len(v.parts) == 2
    assert all(p.point.startswith("service_time 5500 µs · ") for p in v.parts)
    assert {r.coords["service_time"] for r in at_chosen(swept, records)} == {5500}
    assert judged_at(swept) == ("Judged at the plan's own point, service time 5.5 ms ([lab.storage] hdd-array); the "
                                "crossover shows the others (service time 500 µs).")
    unswept = load_plan_text(SWEPT.replace('[sweep]\nservice_time = ["500us", "5.5ms"]\n', ""))
    assert judged_at(unswept) == "" and len(at_chosen(unswept, records)) == len(records)
    assert one(unswept, records).verdict == NOT_REPRODUCED  # without a chosen point, 500 µs is a point of the claim too
