"""The fault analysis (analysis.fault_figures) on synthetic 10 ms timelines with a known stall, known degraded IOPS and a
known recovery."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protolab.analysis.fault_figures import (
    estimate,
    figures,
    longest_stall,
    longest_unanswered,
    recovery,
    rows,
    sentences,
)
from protolab.results.faultwindow import FaultAction, FaultWindow
from protolab.results.records import CellRecord, CellResult, DirectionResult

STEP = 10


def timeline(seconds: float = 20.0, *, level: float = 1000.0, stall=(5.0, 6.2), degraded=None, ramp_s: float = 0.0,
             seed: int = 0) -> list[int]:
    """IOPS per 10 ms bin: ``level`` ±2 %, zero over ``stall`` (s), ``degraded`` = (start, end, fraction), then a
    linear ramp back to the level over ``ramp_s`` after the stall."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(seconds * 1000 / STEP)):
        t = i * STEP / 1000.0
        v = level * (1 + rng.uniform(-0.02, 0.02))
        if degraded and degraded[0] <= t < degraded[1]:
            v *= degraded[2]
        if stall and stall[0] <= t < stall[1]:
            v = 0.0
        elif stall and ramp_s and stall[1] <= t < stall[1] + ramp_s:
            v *= 0.2 + 0.8 * (t - stall[1]) / ramp_s
        out.append(round(v))
    return out


def rec(config: str, repeat: int, iops: list[int], *, fault: str = "down", at: float | None = 5.0,
        duration: float | None = 5.0, errors: int = 0, first: str | None = None, kind: str | None = "link_down",
        first_s: tuple[float, float] | None = None):
    d = DirectionResult(ios=1000, iops=1000.0)
    res = CellResult(iops=1000.0, mbps=4.0, read=d, write=DirectionResult(), lat_mean_us=100.0,
                     percentiles_us={}, jobs=1, runtime_s=20.0, errors=0)
    fw = FaultWindow(fault=fault, kind=kind if fault != "none" else None, at_s=at if fault != "none" else None,
                     duration_s=duration if fault != "none" else None, port=0 if fault != "none" else None,
                     actions=[FaultAction(action="link_down port 0", planned_s=at, at_s=at + 0.004, wall="w")]
                     if fault != "none" else [], errors=errors, first_error=first, first_error_s=first_s,
                     step_ms=STEP, iops=iops)
    return CellRecord(run_id="r", seq=repeat, cell_id=f"{config}-{fault}-{repeat}",
                      coords={"workload": "w", "configuration": config, "load": 0, "repeat": repeat,
                              "fault": fault}, baseline=config == "a", hosts=1, streams_per_host=1,
                      oio_per_stream=4, total_oio=4, started="", ended="", result=res, raw_output="", job_file="",
                      fault=fw)


def test_the_stall_is_the_longest_run_of_bins_without_a_completion():
    assert longest_stall([5, 0, 0, 3, 0, 0, 0, 1], 10) == (30, 0.04)
    assert longest_stall([1, 2, 3], 10) == (0, None)
    f = figures(rec("a", 1, timeline(stall=(5.0, 6.2))))
    assert f.stall_ms == 1200 and f.stall_at_s == pytest.approx(5.0)


def test_degraded_iops_while_the_fault_lasted_are_relative_to_the_same_windows_iops_before_it():
    iops = timeline(stall=None, degraded=(5.0, 10.0, 0.5))
    f = figures(rec("a", 1, iops, at=5.0, duration=5.0))
    assert f.pre_iops == pytest.approx(1000, rel=0.01)
    assert f.degraded_pct == pytest.approx(50, abs=1.5)  # the span starts at the action's 5.004 s: one bin later
    assert f.stall_ms == 0 and f.back is True and f.recovery_s == pytest.approx(0.0, abs=0.01)


def test_back_to_steady_follows_the_ramp_after_the_fault_and_says_when_it_never_comes():
    iops = timeline(stall=(5.0, 10.0), ramp_s=3.0)
    f = figures(rec("a", 1, iops))
    assert f.stall_ms == 5000 and f.back
    assert 1.0 <= f.recovery_s <= 3.0  # a steady window of 5 × 0.5 s may start once the ramp is within 20 %
    dead = timeline(stall=(5.0, 20.0))
    g = figures(rec("a", 1, dead))
    assert g.back is False and g.recovery_s is None and g.stall_ms == 15000
    assert recovery([1000] * 200, STEP, 1.99) is None  # too little after the fault for a steady window


def test_a_window_with_no_fault_has_a_stall_but_nothing_to_come_back_from():
    f = figures(rec("a", 1, timeline(stall=(3.0, 3.05)), fault="none"))
    assert f.stall_ms == 50 and f.back is None and f.degraded_pct is None


def test_repeats_give_a_mean_with_a_t_interval():
    e = estimate([5000, 5100, 4900])
    assert e.mean == pytest.approx(5000) and e.n == 3
    assert (e.high - e.mean) == pytest.approx(4.303 * 100 / math.sqrt(3), rel=1e-3)
    one = estimate([7.0])
    assert one.mean == 7.0 and math.isnan(one.low)
    assert estimate([]) is None


def test_rows_and_sentences_compare_configurations_at_each_fault():
    recs = []
    for k in range(3):
        recs.append(rec("iscsi", k + 1, timeline(stall=(5.0, 10.1 + 0.1 * k), seed=k)))
        recs.append(rec("nbd", k + 1, timeline(stall=(5.0, 5.2), seed=10 + k), errors=2, first="error 5 (x)"))
        recs.append(rec("iscsi", k + 1, timeline(stall=(2.0, 2.03), seed=20 + k), fault="none"))
    got = rows(recs)
    by = {(r.configuration, r.fault): r for r in got}
    assert set(by) == {("iscsi", "down"), ("nbd", "down"), ("iscsi", "none")}
    assert by[("iscsi", "down")].stall_ms.mean == pytest.approx(5200)
    assert by[("nbd", "down")].errors.mean == 2 and by[("nbd", "down")].first_error == "error 5 (x)"
    (w, label, words), = sentences(got)
    assert w == "w" and label.startswith("fault down")
    assert words.startswith("After down (port 0's link went down for 5 s at 5 s): iscsi stalled 5.2 s (5.0–5.4)")
    assert "(with no fault its longest stall was 0.03 s)" in words
    assert "; nbd stalled 0.20 s, 2.0 I/O errors per window (first: error 5 (x))" in words


def test_a_window_whose_fault_control_failed_measures_no_fault_and_says_so():
    recs = [rec("a", k + 1, timeline(stall=None, seed=k)) for k in range(2)]
    err = FaultAction(action="stall 3s", planned_s=5.0, at_s=5.0, wall="w", error="ToolError: refused stall")
    recs = [r.model_copy(update={"fault": r.fault.model_copy(update={"actions": [err], "kind": "array_stall"})})
            for r in recs]
    recs.append(rec("b", 1, timeline(stall=(5.0, 6.0))))
    recs.append(rec("b", 2, timeline(stall=(5.0, 6.0))).model_copy(update={"fault": recs[0].fault}))
    got = {r.configuration: r for r in rows(recs)}
    assert got["a"].repeats == 0 and got["a"].not_done == 2 and got["a"].stall_ms is None
    assert got["b"].repeats == 1 and got["b"].not_done == 1 and got["b"].stall_ms.mean == 1000
    (_, _, words), = sentences(list(got.values()))
    assert "a: the fault was not done in any of its 2 windows (the lab's control failed: ToolError: refused" in words
    assert "b stalled 1.0 s (over 1 windows; the fault was not done in 1 more: ToolError: refused stall)" in words


def test_when_the_first_error_came_after_the_fault_began_is_a_figure_and_said():
    # an initiator that failed I/O back 4-5 s into a 5 s outage: fio's statuses at 9 s (none) and 10 s (one)
    stalled = timeline(stall=(5.0, 12.0))
    failing = rec("short", 1, stalled, errors=900, first="error 5 (Input/output error)", first_s=(9.0, 10.0))
    f = figures(failing)
    assert f.error_after_s == pytest.approx(10.0 - 5.004) and f.stall_ms == 7000  # failed I/Os: no completions
    assert figures(rec("long", 1, stalled)).error_after_s is None
    [row] = [r for r in rows([failing]) if r.kind]
    assert row.error_after_s.mean == pytest.approx(4.996)
    [(_, _, said)] = sentences(rows([failing, rec("long", 1, stalled)]))
    assert "short had no answer for 5.0 s (then its I/O failed with errors) and no completion for 7.0 s, 900.0 I/O " \
        "errors per window (first: error 5 (Input/output error), by 5.0 s after the fault began)" in said
    assert "long stalled 7.0 s, no I/O error" in said, said


@pytest.mark.parametrize(("first_s", "unanswered_ms"), [
    ((8.3, 9.04), 4040),  # inside the stall (5.0-12.0 s): it ends at the status that counted the error
    ((1.0, 2.0), 7000),  # before it: the stall was no answer throughout
    ((12.5, 13.0), 7000),  # after it
    (None, 7000),  # none
    ((4.0, 5.0), 0),  # at its first bin: answered at once
])
def test_the_longest_span_with_no_answer_ends_at_fios_first_error_within_a_stall(first_s, unanswered_ms):
    f = figures(rec("a", 1, timeline(stall=(5.0, 12.0)), errors=1 if first_s else 0, first_s=first_s))
    assert f.stall_ms == 7000 and f.unanswered_ms == unanswered_ms


def test_with_the_longest_stall_cut_at_the_error_a_shorter_one_may_be_the_longest_with_no_answer():
    iops = [5, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1]  # runs of 60 ms from 10 ms and of 30 ms from 80 ms
    assert longest_stall(iops, 10) == (60, 0.01)
    assert longest_unanswered(iops, 10, 0.025) == 30  # the 60 ms run answered 15 ms in; the other is the longest
    assert longest_unanswered(iops, 10, 0.055) == 45
    assert longest_unanswered(iops, 10, 0.09) == 60  # an error in the shorter run leaves the longer one whole
    assert longest_unanswered([0, 0, 0], 10, None) == 30 and longest_unanswered([0, 0, 0], 10, 0.012) == 12
    assert longest_unanswered([1, 2], 10, 0.005) == 0


def test_rows_sentences_and_the_table_give_the_span_with_no_answer_over_repeats():
    from protolab.report.sections.faults_section import HEADERS, row

    stalled = timeline(stall=(5.0, 12.0))
    recs = [rec("short", k + 1, stalled, errors=900, first="error 5 (x)", first_s=(8.0, 9.5 + 0.2 * k))
            for k in range(3)] + [rec("long", k + 1, stalled) for k in range(2)]
    got = {r.configuration: r for r in rows(recs)}
    short, long = got["short"], got["long"]
    assert short.unanswered_ms.mean == pytest.approx(4700) and short.unanswered_ms.n == 3
    assert (short.unanswered_ms.high - 4700) == pytest.approx(4.303 * 200 / math.sqrt(3), rel=1e-3)
    assert short.stall_ms.mean == 7000 and long.unanswered_ms.mean == long.stall_ms.mean == 7000
    [(_, _, said)] = sentences(list(got.values()))
    assert "short had no answer for 4.7 s (4.2–5.2) (then its I/O failed with errors) and no completion for 7.0 s" \
        in said and "long stalled 7.0 s, no I/O error" in said, said
    cells = dict(zip(HEADERS, row(short)))
    assert (cells["stall (s)"], cells["no answer (s)"]) == ("7.00", "4.70 (4.20–5.20)")
    assert dict(zip(HEADERS, row(long)))["no answer (s)"] == "7.00"
