"""A run with faults in the written report: the section in report.md, its timelines' tables, cells.csv's fault
columns and --json's faults (a stored run, capacity-lab, given a fault in every window)."""

from __future__ import annotations

import csv
import json
import shutil

from conftest import DATA
from protolab.report.report_cli import report_json, write_report
from protolab.results.faultwindow import FaultAction, FaultWindow
from protolab.results.records import CellRecord
from protolab.results.rundir import RunDir


def _faulted_run(tmp_path, value=lambda seq: "port0-down"):
    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "capacity-lab" / "run", run)
    m = json.loads((run / "manifest.json").read_text())
    m["dimensions"] = [*m.get("dimensions", []), "fault"]
    (run / "manifest.json").write_text(json.dumps(m))
    out = []
    for line in (run / "records.jsonl").read_text().splitlines():
        r = CellRecord.model_validate_json(line)
        stall = 20 * r.seq  # bins: 0.2 s × seq
        iops = [0 if 100 <= i < 100 + stall else 2000 for i in range(800)]
        fw = FaultWindow(fault=value(r.seq), kind="link_down", at_s=1.0, duration_s=2.0, port=0, step_ms=10,
                         actions=[FaultAction(action="link_down port 0", planned_s=1.0, at_s=1.0, wall="w")],
                         errors=r.seq % 2, first_error="error 5 (Input/output error)" if r.seq % 2 else None,
                         iops=iops, lat_us=[None if v == 0 else 300.0 for v in iops[::10]])
        out.append(r.model_copy(update={"coords": {**r.coords, "fault": value(r.seq)}, "fault": fw})
                   .model_dump_json())
    (run / "records.jsonl").write_text("\n".join(out) + "\n")
    return run


def test_a_run_with_faults_has_its_section_timelines_columns_and_json(tmp_path):
    run = _faulted_run(tmp_path)
    rd = RunDir.open(run)
    path = write_report(rd, figures=False)
    md = (run / "report.md").read_text()
    assert "## Faults under load" in md and "After port0-down (port 0's link went down for 2 s at 1 s):" in md
    rows = list(csv.DictReader((run / "cells.csv").open()))
    first = next(r for r in rows if r["seq"] == "1")
    assert (first["fault"], first["stall_ms"], first["io_errors"]) == ("port0-down", "200", "1")
    assert first["unanswered_ms"] == "200"  # no error timed: the stall was no answer throughout
    assert float(first["degraded_iops"]) == 2000 * (2.0 - 0.2) / 2.0  # the stall's 0.2 s of the fault's 2 s
    assert first["recovery_s"] == "0.0"
    tables = sorted(p.name for p in (run / "tables").glob("fault-*.csv"))
    assert tables and all(t.endswith(("-iops.csv", "-latency.csv")) for t in tables)
    timeline = list(csv.DictReader((run / "tables" / tables[0]).open()))
    assert {"configuration", "repeat", "t_s", "iops", "lat_mean_us"} <= set(timeline[0])
    doc = report_json(RunDir.open(run, write=False), path)
    f = doc["faults"]
    assert f["rows"] and f["rows"][0]["fault"] == "port0-down" and f["rows"][0]["stall_ms"]["n"] >= 1
    assert f["rows"][0]["unanswered_ms"] == f["rows"][0]["stall_ms"] and f["rows"][0]["error_after_s"] is None
    assert f["sentences"][0]["text"].startswith("After port0-down")
    # a faulted window is held by its fault: no bottleneck words about it, its "limited by" names the fault
    assert " was held by " not in md and "fault port0-down (see Faults under load)" in md


def test_two_faults_are_not_compared_as_stage_steps_nor_summed_up_in_the_headline(tmp_path):
    """IOPS at one fault against another's is no finding, nor a chart 'against the fault': the faults section
    reads each fault against "none"; the summary's matrix sums up the windows with no fault only."""
    run = _faulted_run(tmp_path, lambda seq: "none" if seq % 2 else "other-down")
    write_report(RunDir.open(run), figures=False)
    md = (run / "report.md").read_text()
    assert "against fault" not in md and "against the fault" not in md and "After other-down" in md
    assert not [p for p in (run / "tables").glob("stage-*.csv") if "fault" in p.read_text()]  # the rate's steps only
    from protolab.report.tables import build

    rd = RunDir.open(run, write=False)
    [matrix] = build(rd.manifest(), rd.records()).matrices
    assert matrix.loads and not [x for x in matrix.loads if "other-down" in x], matrix.loads


def test_a_run_without_faults_has_no_fault_columns_and_null_json(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "capacity-lab" / "run", run)
    path = write_report(RunDir.open(run), figures=False)
    header = (run / "cells.csv").read_text().splitlines()[0].split(",")
    assert "stall_ms" not in header and "## Faults under load" not in (run / "report.md").read_text()
    assert report_json(RunDir.open(run, write=False), path)["faults"] is None


def test_a_timeline_shades_the_faults_span():
    from protolab.report.chart import Chart, Series
    from protolab.report.figures import figure

    chart = Chart(id="f", kind="timeseries", section="faults", workload="w", title="t", note="", ylabel="IOPS", x=[],
                  series=[Series("a r1", [1.0, 0.0, 1.0], x=[0.1, 0.2, 0.3])], table=[], span=(0.15, 0.25))
    ax = figure(chart).axes[0]
    shaded = [p for p in ax.patches if abs(p.get_alpha() - 0.12) < 1e-9]
    assert len(shaded) == 1
    box = shaded[0].get_extents().transformed(ax.transData.inverted())
    assert (round(box.x0, 6), round(box.x1, 6)) == (0.15, 0.25)
    chart.span = None
    assert not [p for p in figure(chart).axes[0].patches if p.get_alpha() == 0.12]
