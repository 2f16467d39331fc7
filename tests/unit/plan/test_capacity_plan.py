"""`[capacity]` in a plan (plan.rate_ladder): its forms, one-line errors naming the field, the plans it refuses, the
offered rate as a coordinate of the expansion, the job file's per-stream rates and validate's Little's-law warning."""

from __future__ import annotations

import pytest

from protolab.engine.jobfile import layout, render_streams
from protolab.engine.targets import resolve
from protolab.errors import PlanError
from protolab.plan.coordinates import point_of
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.plan.matrix_line import matrix_line
from protolab.plan.warnings import plan_warnings
from protolab.run.recording import coords

PLAN = """name = "cap"
baseline = "a"
workloads = [{{ name = "w", block_size = "4k", read_pct = {read}, random_pct = 100, oio = 16 }}]
[[configurations]]
name = "a"
target = "/var/tmp/protolab-unit/t.dat"
[[configurations]]
name = "b"
target = "/var/tmp/protolab-unit/t.dat"
ioengine = "libaio"
[[load_points]]
streams = 3
[method]
repeats = {repeats}
{method}
[capacity]
{capacity}
"""
LADDER = 'rates = [300, 1000, 2000]\nslo = { percentile = 99, under = "2ms" }'


def _plan(capacity: str = LADDER, *, read: int = 100, repeats: str = "2", method: str = ""):
    return load_plan_text(PLAN.format(capacity=capacity, read=read, repeats=repeats, method=method), source="p.toml")


def test_a_ladder_is_a_list_or_an_evenly_spaced_rule_with_its_objective():
    cap = _plan().capacity
    assert cap.ladder == (300, 1000, 2000) and cap.slo.key == "p99" and cap.slo.under_us == pytest.approx(2000)
    assert (cap.refine, cap.arrivals) == (2, "poisson")
    assert cap.summary() == ("offered 300, 1000, 2000 IOPS (poisson arrivals), objective p99 ≤ 2 ms, up to 2 extra "
                             "steps between the capacity and the next step")
    rule = _plan('rates = { start = 500, stop = 4000, steps = 8 }\nslo = { percentile = 99.9, under = "800us" }\n'
                 'refine = 0\narrivals = "uniform"').capacity
    assert rule.ladder == (500, 1000, 1500, 2000, 2500, 3000, 3500, 4000)
    assert rule.slo.summary() == "p99.9 ≤ 800 µs" and rule.summary().endswith("up to 0 extra steps between the "
                                                                               "capacity and the next step")
    # stored and read back as the report reads a manifest's plan
    dumped = _plan().model_dump(mode="json")
    assert dumped["capacity"] == {"rates": [300, 1000, 2000], "slo": {"percentile": 99.0, "under": 0.002},
                                  "refine": 2, "arrivals": "poisson"}
    assert "capacity" not in _plan().model_copy(update={"capacity": None}).model_dump(mode="json")


@pytest.mark.parametrize("capacity, said", [
    ('rates = [1000, 300]\nslo = { percentile = 99, under = "2ms" }', "capacity.rates: rates must ascend"),
    ('rates = [0, 300]\nslo = { percentile = 99, under = "2ms" }', "capacity.rates: each rate must be a whole number"),
    ('rates = [300]\nslo = { percentile = 99, under = "2ms" }', "capacity.rates: rates must be a list of 2 to 20"),
    ('rates = { start = 500, stop = 502, steps = 8 }\nslo = { percentile = 99, under = "2ms" }',
     "capacity.rates: rates: stop (502) must be at least start + steps - 1 (507)"),
    ('rates = { start = 500, steps = 8 }\nslo = { percentile = 99, under = "2ms" }', "capacity.rates: stop: "),
    ('rates = [300, 1000]\nslo = { percentile = 97, under = "2ms" }',
     "capacity.slo.percentile: percentile must be one a record keeps: 50, 90, 95, 99, 99.9 (got 97)"),
    ('rates = [300, 1000]\nslo = { percentile = 99, under = "soon" }', "capacity.slo.under: expected a latency like"),
    ('rates = [300, 1000]\nslo = { percentile = 99 }', "capacity.slo.under: missing"),
    ('rates = [300, 1000]\nslo = { percentile = 99, under = "2ms" }\nrefine = 11', "capacity.refine:"),
    ('rates = [300, 1000]\nslo = { percentile = 99, under = "2ms" }\narrivals = "bursty"', "capacity.arrivals:"),
    ('rates = [300, 1000]\nslo = { percentile = 99, under = "2ms" }\nrate = 3', "capacity.rate: unknown field"),
])
def test_a_bad_capacity_table_is_one_line_naming_the_field(capacity, said):
    with pytest.raises(PlanError) as e:
        _plan(capacity)
    assert said in str(e.value) and str(e.value).startswith("p.toml:") and "\n" not in str(e.value)


def test_plans_the_ladder_cannot_pace_are_refused_in_one_line():
    paced = PLAN.replace("oio = 16 }", "oio = 16, rate_iops = 100 }")
    with pytest.raises(PlanError) as e:
        load_plan_text(paced.format(capacity=LADDER, read=100, repeats=2, method=""), source="p.toml")
    assert str(e.value) == ("p.toml: capacity: workload w sets its own pace (rate_iops, bursts, think_time or "
                            "replay); the ladder's rate paces every workload of the plan: remove it there")
    with pytest.raises(PlanError) as e:
        _plan(repeats="{ min = 3, max = 5, until_ci_pct = 3 }")
    assert "capacity: adaptive repeats do not go with the ladder's search yet" in str(e.value)
    with pytest.raises(PlanError) as e:
        _plan('rates = [2, 300]\nslo = { percentile = 99, under = "2ms" }')
    assert "capacity.rates: the lowest rate, 2 IOPS, is below one I/O per second for each of the 3 streams" in str(
        e.value)
    with pytest.raises(PlanError) as e:
        _plan(method="prepare = false\n[stage.fill]\nlevels = [50]")
    assert "capacity: not with [stage.fill] or [stage.age]" in str(e.value)


def test_the_offered_rate_is_an_outer_coordinate_with_configurations_interleaved_at_each():
    plan = _plan()
    cells = expand(plan)
    assert [c.id for c in cells[:5]] == ["w__a__h1s3q16__rate300__r1", "w__b__h1s3q16__rate300__r1",
                                         "w__a__h1s3q16__rate300__r2", "w__b__h1s3q16__rate300__r2",
                                         "w__a__h1s3q16__rate1000__r1"]
    assert len(cells) == 12 and coords(cells[4])["rate"] == 1000
    assert plan.stages[0].dimensions == ("rate",)  # the run directory's cells.csv gets a rate column
    assert matrix_line(plan, len(cells)).startswith(
        "2 configurations × 1 workloads × 1 load points × 2 repeats × 3 offered rates = 12 cells (+ up to 8 by the "
        "search)")
    assert "; offered 300, 1000, 2000 IOPS (poisson arrivals)" in plan.method_summary()


def test_a_records_point_reads_the_rate_in_iops():
    from protolab.results.records import CellRecord, CellResult, DirectionResult

    res = CellResult(iops=1.0, mbps=0.0, read=DirectionResult(), write=DirectionResult(), lat_mean_us=1.0,
                     percentiles_us={}, jobs=1, runtime_s=1.0, errors=0)
    rec = CellRecord(run_id="r", seq=1, cell_id="x", coords={"workload": "w", "configuration": "a", "load": 0,
                                                              "repeat": 1, "rate": 1000}, baseline=True, hosts=1,
                     streams_per_host=3, oio_per_stream=16, total_oio=48, started="", ended="", result=res,
                     raw_output="", job_file="")
    assert point_of(rec).label == "rate 1000 IOPS · 1×3×16=48" and point_of(rec).slug == "rate1000-0"


@pytest.mark.parametrize("read, arrivals, want", [
    (100, "poisson", ["334", "333", "333"]), (70, "uniform", ["234,100", "233,100", "233,100"])])
def test_each_stream_offers_its_share_of_the_rate(tmp_path, read, arrivals, want):
    plan = _plan(LADDER + f'\narrivals = "{arrivals}"', read=read)
    cell = next(c for c in expand(plan) if c.id == "w__a__h1s3q16__rate1000__r1")
    access = resolve(str(tmp_path / "t.dat"), size=64 * 1024**2, ioengine="libaio", direct=True)
    job = render_streams(cell, [s for h in layout(cell, lambda h, g: access) for s in h], runtime=2)
    assert [ln.split("=", 1)[1] for ln in job.splitlines() if ln.startswith("rate_iops=")] == want
    assert ("rate_process=poisson" in job) == (arrivals == "poisson")
    assert "rate_iops" not in render_streams(expand(load_plan_text(PLAN.split("[capacity]")[0].format(
        read=100, repeats=2, method=""))).pop(), [], runtime=2)  # no ladder: no rate


def test_validate_warns_when_the_outstanding_ios_cannot_carry_the_top_rate_within_the_objective():
    assert plan_warnings(_plan(repeats="3")) == []  # 48 in flight ≥ 2,000 IOPS × 2 ms = 4
    [w] = plan_warnings(_plan('rates = [300, 1000, 2000]\nslo = { percentile = 99, under = "50ms" }', repeats="3"))
    assert w == ("capacity: load point 1×3×16=48 keeps at most 48 I/Os in flight, which carry 960 IOPS at the "
                 "objective's 50 ms (Little's law), below the top rate 2,000: where latency nears the objective, fio "
                 "and not the storage holds the I/Os back (the step fails as not kept up); raise oio to at least 34 "
                 "per stream")
