"""Run-to-run comparison: matching cells, what differs, refusal of mismatched plans, B relative to A."""

import numpy as np
import pytest

from protolab.analysis.compare import check_comparable, compare_runs, differences, unmatched
from protolab.analysis.stats import HIGHER, NO_CLEAR_DIFFERENCE
from protolab.errors import ProtolabError
from protolab.results.manifest import Manifest
from protolab.results.records import CellRecord, CellResult, DirectionResult

WORKLOAD = {"name": "w4k", "block_size": 4096, "read_pct": 75.0, "random_pct": 100.0, "oio": 4, "rate_iops": None}


def rec(config, streams, repeat, iops, workload="w4k", load_index=None):
    d = DirectionResult(ios=int(iops), iops=iops)
    res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(), lat_mean_us=1e6 / iops,
                     percentiles_us={"p99": 3e6 / iops}, jobs=1, runtime_s=2.0, errors=0)
    return CellRecord(run_id="r", seq=repeat, cell_id=f"{workload}-{config}-{streams}-{repeat}", workload=workload,
                      configuration=config, baseline=config == "base",
                      load_index=streams - 1 if load_index is None else load_index, hosts=1,
                      streams_per_host=streams, oio_per_stream=4, total_oio=4 * streams, repeat=repeat, started="",
                      ended="", result=res, raw_output="", job_file="")


def run(scale=1.0, streams=(1, 2), configs=("base", "x"), n=8, seed=0, workload="w4k"):
    rng = np.random.default_rng(seed)
    return [rec(c, s, k + 1, float(rng.normal(10000 * scale * s, 30)), workload) for s in streams for c in configs
            for k in range(n)]


def manifest(kernel="6.1", workloads=(WORKLOAD,), repeats=8):
    return Manifest.model_validate(
        {"plan": {"name": "p", "workloads": list(workloads), "method": {"repeats": repeats, "duration": 2.0}},
         "provenance": {"kernel": kernel, "fio_version": "fio-3.33", "protolab": "0.1.0"}})


def test_same_plan_two_kernels_b_relative_to_a():
    a, b = run(1.0, seed=1), run(1.10, seed=2)
    diffs = differences(manifest("6.1"), a, manifest("6.12"), b)
    assert [d.text() for d in diffs] == ["environment kernel (A: 6.1; B: 6.12)"]
    check_comparable(diffs, force=False)  # nothing blocking
    rows = compare_runs(a, b, ["iops", "lat_mean_us"])
    assert len(rows) == 2 * 2 * 2  # 2 load points × 2 configurations × 2 metrics
    assert [(r.load_label, r.configuration, r.metric) for r in rows[:4]] == [
        ("1×1×4=4", "base", "iops"), ("1×1×4=4", "base", "lat_mean_us"),
        ("1×1×4=4", "x", "iops"), ("1×1×4=4", "x", "lat_mean_us")]
    for r in rows:
        assert r.n_a == r.n_b == 8
        if r.metric == "iops":
            assert r.relative == pytest.approx(110, abs=1.0) and r.ci_low > 102 and r.verdict == HIGHER
        else:
            assert r.relative == pytest.approx(100 / 1.1, abs=1.0) and r.ci_high < 98


def test_same_environment_no_clear_difference():
    rows = compare_runs(run(1.0, seed=1), run(1.0, seed=2), ["iops"])
    assert {r.verdict for r in rows} == {NO_CLEAR_DIFFERENCE}
    assert all(99 < r.relative < 101 and r.ci_low < 100 < r.ci_high for r in rows)


def test_refuses_runs_whose_load_points_differ_and_says_what_differs():
    a, b = run(streams=(1, 2)), run(streams=(1, 4))
    diffs = differences(manifest(), a, manifest(), b)
    with pytest.raises(ProtolabError) as e:
        check_comparable(diffs, force=False, name_a="runs/A", name_b="runs/B")
    msg = str(e.value)
    assert msg.startswith("compare runs/A runs/B: runs differ in load points (A: w4k: 1×1×4=4, 1×2×4=8; "
                          "B: w4k: 1×1×4=4, 1×4×4=16)")
    assert msg.endswith("pass --force to compare the cells they share anyway") and "\n" not in msg
    check_comparable(diffs, force=True)
    rows = compare_runs(a, b, ["iops"])
    assert {r.load_label for r in rows} == {"1×1×4=4"}
    only_a, only_b = unmatched(a, b)
    assert only_a == [("w4k", "1×2×4=8", "base"), ("w4k", "1×2×4=8", "x")]
    assert only_b == [("w4k", "1×4×4=16", "base"), ("w4k", "1×4×4=16", "x")]


def test_refuses_runs_whose_workloads_differ():
    a, b = run(workload="w4k"), run(workload="w8k")
    w8k = {**WORKLOAD, "name": "w8k", "block_size": 8192}
    diffs = differences(manifest(), a, manifest(workloads=(w8k,)), b)
    with pytest.raises(ProtolabError, match=r"runs differ in workloads \(A: w4k; B: w8k\)"):
        check_comparable(diffs, force=False)


def test_same_name_different_access_spec_is_a_different_workload():
    changed = {**WORKLOAD, "block_size": 8192}
    diffs = differences(manifest(), run(), manifest(workloads=(changed,)), run())
    assert [d.what for d in diffs if d.blocking] == ["workload w4k"]
    assert "block_size=4096" in diffs[0].a and "block_size=8192" in diffs[0].b


def test_configurations_and_method_differences_are_reported_not_blocking():
    a, b = run(configs=("base", "x")), run(configs=("base", "y"))
    diffs = differences(manifest(repeats=8), a, manifest(repeats=5), b)
    assert [(d.what, d.blocking) for d in diffs] == [("configurations", False), ("method repeats", False)]
    assert {r.configuration for r in compare_runs(a, b, ["iops"])} == {"base"}
