"""The capacity ladder's figures (analysis.capacity) on ladders made by hand: when a step keeps up, the knee (where
latency leaves the lowest step's interval for good), the capacity under the objective with its interval over
repeats (censored at either end), the bounded search's next step, and the ladders found in records."""

from __future__ import annotations

import math

import pytest

from protolab.analysis.capacity import Step, capacity, floor_share, kept_up, knee, ladders, meets, next_rate
from protolab.results.records import CellRecord, CellResult, DirectionResult

LIMIT = 10_000.0  # µs: the objective's limit in these ladders


def step(offered: int, latency: list[float], objective: list[float] | None = None, *, share: float = 1.0,
         refined: bool = False) -> Step:
    """A step of 2 s windows at ``offered`` IOPS: each repeat's mean latency and objective percentile (µs), its
    achieved IOPS ``share`` × offered."""
    n = len(latency)
    objective = objective or [2 * v for v in latency]
    return Step(offered, tuple(range(1, n + 1)), (offered * share,) * n, tuple(latency), tuple(objective),
                (round(offered * share * 2),) * n, (2.0,) * n, refined)


def test_a_step_keeps_up_within_a_poisson_counts_bound_or_the_lowest_steps_own_shortfall():
    # 1,000 IOPS for 2 s: 2,000 expected, its one-sided 95 % bound 1.645 × √2000 = 73.6 below
    assert kept_up(1000, 1927, 2.0, 0.05) and not kept_up(1000, 1926, 2.0, 0.05)
    assert kept_up(1000, 1900, 2.0, 0.001) and not kept_up(1000, 1850, 2.0, 0.001)  # α = 0.001: 3.09 σ = 138
    assert kept_up(1000, 1900, 2.0, 0.05, floor_share=0.95) and not kept_up(1000, 1880, 2.0, 0.05, floor_share=0.95)
    assert not kept_up(1000, 5000, 0.0, 0.05)
    ladder = [step(500, [1000] * 3, share=0.93), step(900, [1000] * 3)]
    assert floor_share(ladder) == pytest.approx(0.93)  # 930 of 1,000 I/Os: this machine's fio came short by itself
    assert floor_share([]) == math.inf


def test_a_step_meets_the_objective_at_a_repeat_by_that_windows_percentile_and_count():
    s = step(1000, [3000, 3000, 3000], [9000, 12_000, 9500])
    assert [meets(s, LIMIT, 0.05, r) for r in range(3)] == [True, False, True]
    fast_short = step(1000, [3000] * 3, share=0.8)  # fast, but it carried 80 % of the rate
    assert not meets(fast_short, LIMIT, 0.05, 0) and meets(fast_short, LIMIT, 0.05, 0, floor=0.8)
    assert not meets(Step(1000, (1,), (1000.0,), (3000.0,), (None,), (2000,), (2.0,)), LIMIT, 0.05, 0)


def test_the_knee_is_the_lowest_step_from_which_every_higher_one_is_above_the_floors_interval():
    ladder = [step(500, [1000, 1010, 1005]), step(700, [1008, 1012, 1003]),  # overlaps the floor: still on it
              step(900, [1100, 1120, 1090]), step(1100, [5000, 5200, 4900])]
    k = knee(ladder)
    assert (k.offered, k.achieved, k.below, k.floor_us, k.at_us) == (900, 900.0, 700, (1000, 1010), (1090, 1120))
    # a step above the floor followed by one back on it is no knee: the knee is where latency leaves it for good
    back = [ladder[0], step(600, [1100, 1100, 1100]), step(700, [1000, 1004, 1009]), *ladder[2:]]
    assert knee(back).offered == 900
    assert knee(ladder[:2]) is None  # never above the floor
    assert knee([step(500, [1000, 1001]), step(900, [3000, 3000])]) is None  # 2 repeats: no interval
    assert knee(ladder[:1]) is None


def test_the_capacity_is_the_median_of_each_repeats_highest_contiguous_pass_with_its_interval():
    ladder = [step(500, [1000] * 5, [2000] * 5), step(800, [1000] * 5, [3000, 3000, 3000, 11_000, 3000]),
              step(900, [1000] * 5, [9000, 12_000, 9000, 12_000, 9000]), step(1100, [1000] * 5, [20_000] * 5)]
    c = capacity(ladder, LIMIT, 0.05)
    # per repeat: 900, 800, 900, 500 (800 failed it, 900's pass above does not count), 900
    assert c.per_repeat == (900, 800, 900, 500, 900)
    assert (c.value, c.low, c.high, c.next_step, c.above, c.below) == (900, 500, 900, 1100, False, False)
    assert c.coverage == pytest.approx(0.9375)  # 5 repeats: min–max covers the median with 93.75 %
    # every step met it in most repeats: at least the top; the lowest failed in most: below the ladder (0)
    allpass = capacity(ladder[:2], LIMIT, 0.05)
    assert (allpass.value, allpass.above, allpass.next_step) == (800, True, None)
    none = capacity([ladder[3]], LIMIT, 0.05)
    assert (none.value, none.below, none.next_step) == (0, True, 1100)
    # an even number of repeats: the median between two steps, the next step the one above it
    even = capacity([ladder[0], step(800, [1000] * 4, [3000, 3000, 11_000, 11_000]), ladder[3]], LIMIT, 0.05)
    assert (even.value, even.next_step) == (650, 800)
    assert math.isnan(capacity([step(500, [1000, 1000])], LIMIT, 0.05).low)  # 2 repeats: no interval
    assert capacity([], LIMIT, 0.05) is None


def test_the_search_bisects_between_the_last_pass_and_the_first_failure_at_most_refine_times():
    ok, bad = [3000] * 3, [20_000] * 3
    ladder = [step(500, [1000] * 3, ok), step(1000, [1000] * 3, ok), step(1500, [1000] * 3, bad)]
    assert next_rate(ladder, LIMIT, 0.05, refine=2) == 1250
    # the capacity, the median of repeats, decides: 1,000 met in one repeat of three is below it
    assert next_rate([ladder[0], step(1000, [1000] * 3, [3000, 20_000, 20_000]), ladder[2]], LIMIT, 0.05, 2) == 750
    searched = [*ladder[:2], step(1250, [1000] * 3, bad, refined=True), ladder[2]]
    assert next_rate(searched, LIMIT, 0.05, refine=2) == 1125
    twice = [*ladder[:2], step(1125, [1000] * 3, ok, refined=True), *searched[2:]]
    assert next_rate(twice, LIMIT, 0.05, refine=2) is None  # two extra steps: done
    assert next_rate(twice, LIMIT, 0.05, refine=3) == 1187
    assert next_rate(ladder, LIMIT, 0.05, refine=0) is None
    assert next_rate(ladder[:2], LIMIT, 0.05, refine=2) is None  # every step met it: no gap
    assert next_rate([step(500, [1000] * 3, bad), *ladder[1:]], LIMIT, 0.05, refine=2) is None  # below the ladder
    assert next_rate([step(1000, [1000] * 3, ok), step(1001, [1000] * 3, bad)], LIMIT, 0.05, refine=2) is None


def _record(rate: int, repeat: int, latency: float, p90: float, configuration: str = "a",
            failed: bool = False) -> CellRecord:
    d = DirectionResult(ios=rate * 2, iops=float(rate))
    res = CellResult(iops=float(rate), mbps=0.0, read=d, write=DirectionResult(), lat_mean_us=latency,
                     percentiles_us={"p90": p90}, jobs=1, runtime_s=2.0, errors=1 if failed else 0)
    return CellRecord(run_id="r", seq=1, cell_id=f"w__{configuration}__h1s2q8__rate{rate}__r{repeat}",
                      coords={"workload": "w", "configuration": configuration, "load": 0, "repeat": repeat,
                              "rate": rate}, baseline=configuration == "a", hosts=1, streams_per_host=2,
                      oio_per_stream=8, total_oio=16, started="", ended="", status="failed" if failed else "ok",
                      result=res, raw_output="", job_file="")


def test_ladders_are_found_in_records_per_configuration_and_point_and_a_step_counts_once_whole():
    recs = [_record(rate, r, lat, p90, c) for c in ("a", "b") for r in (1, 2, 3)
            for rate, lat, p90 in ((500, 1000, 2000), (900, 1500 if c == "a" else 1000, 3000), (1300, 9000, 20_000))]
    recs += [_record(1100, 1, 1000, 3000, "a"), _record(1100, 2, 1000, 3000, "a", failed=True)]  # searched, cut short
    found = ladders(recs, ladder=(500, 900, 1300), percentile_key="p90", limit_us=LIMIT, refine=2, repeats=3)
    assert [(g.configuration, g.label, [s.offered for s in g.steps]) for g in found] == [
        ("a", "1×2×8=16", [500, 900, 1300]), ("b", "1×2×8=16", [500, 900, 1300])]
    a, b = found
    assert a.outer == (("load", 0),) and a.knee.offered == 900 and b.knee.offered == 1300
    assert a.capacity.value == 900 and a.next_rate == 1100  # 1,100 has one good repeat of 3: asked for again
    whatever = ladders(recs, ladder=(500, 900, 1300), percentile_key="p90", limit_us=LIMIT, refine=2)
    assert [s.offered for s in whatever[0].steps] == [500, 900, 1100, 1300] and whatever[0].steps[2].refined
    assert ladders([r.model_copy(update={"coords": {k: v for k, v in r.coords.items() if k != "rate"}})
                    for r in recs], ladder=(500,), percentile_key="p90", limit_us=LIMIT, refine=2) == []
