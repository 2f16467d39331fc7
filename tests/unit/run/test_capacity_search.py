"""The capacity ladder's bounded search in the schedule (run.search): after the ladder, the midpoint between each
configuration's last passing and first failing step at every repeat, configurations interleaved, at most ``refine``
steps; a resumed run measures a cut-short step's missing repeats and nothing twice."""

from __future__ import annotations

from protolab.plan.load import load_plan_text
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.run.schedule import schedule

PLAN = """name = "cap"
baseline = "a"
workloads = [{ name = "w", block_size = "4k", read_pct = 100, random_pct = 100, oio = 16 }]
[[configurations]]
name = "a"
target = "/var/tmp/protolab-unit/t.dat"
[[configurations]]
name = "b"
target = "/var/tmp/protolab-unit/t.dat"
[[load_points]]
streams = 2
[method]
repeats = 3
[capacity]
rates = [500, 1000, 2000]
slo = { percentile = 99, under = "2ms" }
refine = 2
"""
#: the storage each configuration reaches: within the objective up to this offered rate
LIMIT = {"a": 1400, "b": 1800}


def _measure(cell) -> CellRecord:
    rate, c = cell.step("rate").value, cell.configuration.name
    p99 = 1000.0 if rate <= LIMIT[c] else 5000.0
    d = DirectionResult(ios=rate * 2, iops=float(rate))
    res = CellResult(iops=float(rate), mbps=0.0, read=d, write=DirectionResult(), lat_mean_us=p99 / 2,
                     percentiles_us={"p99": p99}, jobs=2, runtime_s=2.0, errors=0)
    lp = cell.load_point
    return CellRecord(run_id="r", seq=1, cell_id=cell.id, coords={"workload": "w", "configuration": c, "load": 0,
                                                                   "repeat": cell.repeat, "rate": rate},
                      baseline=c == "a", hosts=lp.hosts, streams_per_host=lp.streams, oio_per_stream=cell.oio,
                      total_oio=cell.total_oio, started="", ended="", result=res, raw_output="", job_file="")


def _run(plan, stored: list[CellRecord], stop_after: int | None = None) -> list[tuple[str, str]]:
    """Measure what the schedule says, storing each record as the session does; (cell id, reason) in order."""
    out = []
    for item in schedule(plan, lambda: list(stored)):
        if stop_after is not None and len(out) == stop_after:
            break
        stored.append(_measure(item.cell))
        out.append((item.cell.id, item.reason))
    return out


def test_the_search_bisects_each_configurations_gap_interleaved_at_every_repeat_at_most_twice():
    plan = load_plan_text(PLAN)
    done = _run(plan, [])
    ids = [i for i, _ in done]
    assert ids[:18] == [f"w__{c}__h1s2q16__rate{v}__r{r}" for v in (500, 1000, 2000) for r in (1, 2, 3)
                        for c in "ab"]
    # round 1: both between 1,000 (met) and 2,000 (missed): 1,500; round 2: a missed 1,500 → 1,250, b met it → 1,750
    assert ids[18:] == [f"w__{c}__h1s2q16__rate1500__r{r}" for r in (1, 2, 3) for c in "ab"] + [
        f"w__{c}__h1s2q16__rate{v}__r{r}" for r in (1, 2, 3) for c, v in (("a", 1250), ("b", 1750))]
    assert len(ids) == len(set(ids)) == 30
    assert done[18][1] == ("search step 1 of at most 2: 1500 IOPS, between the capacity under p99 ≤ 2 ms and the next "
                           "step")
    assert done[-1][1].startswith("search step 2 of at most 2: 1750 IOPS")
    assert done[0][1] == "repeat 1 of 3"


def test_a_resumed_search_measures_the_missing_repeats_of_a_cut_short_step_and_nothing_twice():
    plan = load_plan_text(PLAN)
    first = _run(plan, stored := [], stop_after=20)  # stopped two windows into the search's first step
    assert [i for i, _ in first[18:]] == ["w__a__h1s2q16__rate1500__r1", "w__b__h1s2q16__rate1500__r1"]
    again = _run(plan, stored)
    ids = [i for i, _ in again]
    assert ids[:4] == ["w__a__h1s2q16__rate1500__r2", "w__b__h1s2q16__rate1500__r2",
                       "w__a__h1s2q16__rate1500__r3", "w__b__h1s2q16__rate1500__r3"]
    assert not {i for i, _ in first} & set(ids) and len(first) + len(ids) == 30


def test_without_refine_or_with_every_step_met_there_is_no_search():
    plan = load_plan_text(PLAN.replace("refine = 2", "refine = 0"))
    assert len(_run(plan, [])) == 18
    LIMIT["a"] = LIMIT["b"] = 5000
    try:
        assert len(_run(load_plan_text(PLAN), [])) == 18
    finally:
        LIMIT.update(a=1400, b=1800)
