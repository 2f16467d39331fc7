"""The latency breakdown in the written report: its section in report.md, its charts' tables, --json's breakdown and
cells.csv's columns (a stored run, sweep-lab, given a device model's time in every window and a capture on iscsi's
last repeat)."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from conftest import DATA
from protolab.report.cellscsv import breakdown_columns, write
from protolab.report.report_cli import report_json, write_report
from protolab.report.report_data import plan_of
from protolab.results.records import CellRecord, DeviceTime, ServicePoint, ServiceTimes
from protolab.results.rundir import BREAKDOWN_COLUMNS, RunDir


def _timed(r: CellRecord) -> CellRecord:
    """A device model's 5 µs queue and 100 µs service; iscsi's third repeat captured: the host's SRT 40 µs below fio's
    mean, the server's 25 µs below the host's."""
    st = None
    if not r.baseline and r.repeat == 3:
        host = r.result.lat_mean_us - 40.0
        st = ServiceTimes(protocol="iscsi", start_s=1.0, seconds=0.3, points=[
            ServicePoint(point="h0/eth0", role="host", srt_us=host, pairs=900, frames=2000),
            ServicePoint(point="st/p0", role="server", srt_us=host - 25.0, pairs=900, frames=2000)])
    ios = r.result.read.ios + r.result.write.ios  # one request per I/O, as the lab's O_DIRECT paths give
    return r.model_copy(update={"device_time": DeviceTime(requests=ios, reads=ios, queue_us=5.0, service_us=100.0),
                                "service_times": st})


def _run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "sweep-lab" / "run", run)
    lines = (run / "records.jsonl").read_text().splitlines()
    out = [_timed(CellRecord.model_validate_json(line)).model_dump_json() for line in lines]
    (run / "records.jsonl").write_text("\n".join(out) + "\n")
    return run


def test_the_written_report_has_the_breakdown_section_its_tables_and_json(tmp_path):
    run = _run(tmp_path)
    rd = RunDir.open(run)
    path = write_report(rd, figures=False)
    md = (run / "report.md").read_text()
    assert "## Where each microsecond goes" in md
    assert "| initiator 40.0 (1 repeat); network 25.0 (1 repeat); server " in md
    assert "initiator, network and server: one repeat, no interval; device: over 3 repeats, 95 % t interval" in md
    tables = sorted(p.name for p in (run / "tables").glob("breakdown-*.csv"))
    assert tables == ["breakdown-4k-randread-service_time0-0.csv", "breakdown-4k-randread-service_time500-0.csv"]
    table = list(csv.DictReader((run / "tables" / tables[0]).open()))
    assert [(t["configuration"], t["part"]) for t in table] == [
        ("direct", "initiator"), ("direct", "device"), ("iscsi", "initiator"), ("iscsi", "network"),
        ("iscsi", "server"), ("iscsi", "device")]
    doc = report_json(RunDir.open(run, write=False), path)["breakdown"]
    iscsi = next(b for b in doc if b["configuration"] == "iscsi")
    assert [p["part"] for p in iscsi["parts"]] == ["initiator", "network", "server", "device"]
    assert iscsi["parts"][1]["us"] == {"mean": pytest.approx(25.0), "low": None, "high": None, "n": 1}
    assert iscsi["parts"][3]["us"]["n"] == 3 and iscsi["captured_repeats"] == 1 and iscsi["not_measured"] == []
    direct = next(b for b in doc if b["configuration"] == "direct")
    assert [p["part"] for p in direct["parts"]] == ["initiator", "device"] and direct["baseline"] is True


def test_cells_csv_has_each_windows_parts_when_the_plan_asks_for_the_breakdown(tmp_path):
    run = _run(tmp_path)
    plan = plan_of(RunDir.open(run, write=False).manifest())
    m = json.loads((run / "manifest.json").read_text())
    m["plan"]["method"]["breakdown"] = True
    (run / "manifest.json").write_text(json.dumps(m))
    rd = RunDir.open(run)
    assert rd.csv_columns[-len(BREAKDOWN_COLUMNS) - 1:-1] == BREAKDOWN_COLUMNS  # before the sweep's dimension
    records = rd.records()
    write(rd, records, plan)
    rows = {(r["configuration"], r["repeat"], r["service_time"]): r for r in csv.DictReader((run / "cells.csv").open())}
    captured = rows[("iscsi", "3", "500")]
    assert (captured["time_network_us"], captured["time_device_us"]) == ("25.0", "105.0")
    assert captured["time_parts"].startswith("initiator 40.0; network 25.0; server ")
    assert float(captured["time_residual_pct"]) == pytest.approx(0.0, abs=1e-6)
    uncaptured = rows[("iscsi", "1", "500")]
    assert uncaptured["time_initiator_us"] == "" and uncaptured["time_device_us"] == "105.0"
    assert uncaptured["time_parts"].startswith("initiator + network + server ")
    direct = rows[("direct", "1", "500")]  # a local path: no network, no server
    assert direct["time_parts"].startswith("initiator ") and direct["time_parts"].endswith("; device 105.0")


def test_a_window_without_a_device_model_or_a_capture_has_no_breakdown_columns_and_a_folded_part_none_of_its_own():
    r = _timed(CellRecord.model_validate_json((DATA / "golden" / "sweep-lab" / "run" / "records.jsonl")
                                              .read_text().splitlines()[0]))
    assert breakdown_columns(r.model_copy(update={"device_time": None, "service_times": None})) == {}
    assert set(breakdown_columns(r)) == {"time_device_us", "time_parts", "time_residual_pct"}  # a wire: folded
    assert set(breakdown_columns(r, wired=False)) == {"time_initiator_us", "time_device_us", "time_parts",
                                                      "time_residual_pct"}


def test_without_any_time_below_fios_there_is_no_section_and_json_is_empty(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "sweep-lab" / "run", run)
    path = write_report(RunDir.open(run), figures=False)
    assert "## Where each microsecond goes" not in (run / "report.md").read_text()
    assert report_json(RunDir.open(run, write=False), path)["breakdown"] == []
    assert "time_parts" not in (run / "cells.csv").read_text().splitlines()[0].split(",")
