"""A run directory written by schema 1 (captured from protolab before records v2) still reports and compares."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from conftest import DATA
from protolab.analysis.derived import figures
from protolab.errors import ProtolabError
from protolab.report.report_cli import run_compare, write_report
from protolab.results.manifest import RunStart
from protolab.results.rundir import RunDir

V1 = DATA / "v1-run"


@pytest.fixture
def v1(tmp_path) -> RunDir:
    dst = tmp_path / "20261122-153353-v1-capture"
    shutil.copytree(V1, dst)
    return RunDir.open(dst)


def test_v1_records_migrate_to_typed_records(v1):
    recs = v1.records()
    assert v1.schema == 1 and len(recs) == 9
    r = next(x for x in recs if x.cell_id == "tr3808-4k__iscsi-1500__h1s1q4__r2")
    assert r.coords == {"workload": "tr3808-4k", "configuration": "iscsi-1500", "load": 0, "repeat": 2}
    assert r.result.iops == pytest.approx(12970.01, abs=0.01)
    assert r.telemetry is not None and r.telemetry.servers_cpu_s["tgtd"] == pytest.approx(1.91, abs=0.001)
    assert r.telemetry.storage_ports == ["plv1-st/plv1s0"] and r.warmup.mode == "fixed" and r.warmup.seconds == 1
    f = figures(r)  # recomputed from the stored counters: the same figures schema 1 stored
    assert f.cpu_us_per_io_server == pytest.approx(1.910577e6 / (r.result.read.ios + r.result.write.ios), rel=1e-9)
    assert f.packets_per_io == pytest.approx((50848 + 48778) / (r.result.read.ios + r.result.write.ios), rel=1e-9)
    stored = json.loads((V1 / "records" / f"{r.cell_id}.json").read_text())["result"]["extra"]
    assert v1.series()[r.seq]["all"] == stored["iops_series"] and len(stored["iops_series"]) == 2
    assert v1.series()[r.seq]["h1"] == stored["iops_series_by_host"]["h1"]


def test_v1_run_reports(v1):
    html = write_report(v1, figures=False)
    md = (v1.path / "report.md").read_text()
    assert html.is_file() and "iscsi-1500" in md and "nbd-1500" in md
    rows = list(csv.DictReader((v1.path / "cells.csv").open()))
    assert len(rows) == 9 and all(float(r["cpu_us_per_io_server"]) > 0 for r in rows if r["configuration"] != "local")


def test_v1_run_compares_against_a_v2_run(v1, tmp_path):
    # a schema-2 run of the same cells: the migrated records written through today's store, IOPS scaled by 1.2
    m = v1.manifest()
    v2 = RunDir.create(tmp_path / "new", "v1-capture", RunStart(
        plan_source=m.plan_source, plan=m.plan, plan_text=m.plan_text, plan_format=m.plan_format,
        provenance=m.provenance, testbed=m.testbed or {}, cells_total=m.cells_total, dimensions=m.dimensions))
    for r in v1.records():
        res = r.result.model_copy(update={"iops": r.result.iops * 1.2})
        v2.add_record(r.model_copy(update={"run_id": v2.run_id, "result": res}))
    assert RunDir.open(v2.path).schema == 2
    path, rows, text, _pairs = run_compare(v1.path, v2.path, out=tmp_path / "cmp")
    iops = [x for x in rows if x.metric == "iops"]
    assert len(iops) == 3 and all(x.relative == pytest.approx(120.0, abs=0.01) for x in iops)
    assert path.is_file() and "B relative to A" in text


def test_unknown_schema_is_refused_in_one_line(v1):
    m = json.loads((v1.path / "manifest.json").read_text())
    m["schema_version"] = 7
    (v1.path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ProtolabError) as e:
        RunDir.open(v1.path)
    assert str(e.value).endswith("schema version 7 is not one this protolab reads (1, 2); use the protolab "
                                 "version that wrote it")
