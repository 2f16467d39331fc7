"""`protolab run` from a user's point of view, on local files."""

from __future__ import annotations

import csv
import json
import re

from conftest import shared_plan
from protolab.analysis.derived import figures
from protolab.results.rundir import RunDir, csv_columns


def _plan(data, *, duration: str = "2s", more: str = "", **values: str) -> str:
    """The shared psync/io_uring plan on directory ``data``, load points 1×1 and 2×8; ``more`` appended to [method]."""
    values = {"load_points": "[{ streams = 1, oio = 1 }, { streams = 2, oio = 8 }]", **values}
    text = shared_plan("psync-io_uring", name='"e2e"', url=f'"{data}"', duration=f'"{duration}"', **values)
    return text + more + "\n"


def test_run_writes_manifest_csv_raw_and_table(tmp_path, cli):
    data = tmp_path / "data"
    data.mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(_plan(data))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=300)
    assert p.returncode == 0, p.stderr
    run = next((tmp_path / "results").iterdir())
    m = json.loads((run / "manifest.json").read_text())
    assert m["schema_version"] == 2 and m["status"] == "complete" and m["cells_total"] == 8
    assert m["cells_done"] == 8 and m["last_seq"] == 8 and m["phase"] == "done"
    [s] = m["sessions"]
    assert s["session"] == 1 and s["how"] == "complete" and s["cells_measured"] == 8 and s["ended"]
    assert m["testbed"]["kind"] == "local"
    assert m["plan"]["baseline"] == "psync" and m["plan_text"] == plan.read_text()
    prov = m["provenance"]
    assert prov["fio_version"].startswith("fio-") and {"libiscsi", "nfs", "nbd"} <= set(prov["fio_engines"])
    assert prov["kernel"] and prov["cpu_model"] and m["started"] <= m["ended"]
    # the report written at the run's end shows that end, the manifest's own
    ran = f"status complete · started {m['started']} · ended {m['ended']} · 8 measured windows"
    assert ran in (run / "report.md").read_text() and ran in (run / "report.html").read_text()
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert list(rows[0]) == csv_columns()
    assert rows[0]["configuration"] == "psync" and rows[0]["total_oio"] == "1" and rows[0]["status"] == "ok"
    assert all(float(r["cpu_us_per_io_loadgen"]) > 0 and float(r["cpu_us_per_io_total"]) > 0 for r in rows)
    assert len(rows) == 8
    assert [r["configuration"] for r in rows[:4]] == ["psync", "io_uring", "psync", "io_uring"]  # interleaved
    for r in rows:
        assert float(r["iops"]) > 0 and float(r["lat_mean_us"]) > 0 and r["errors"] == "0"
        assert abs(float(r["iops"]) - float(r["read_iops"]) - float(r["write_iops"])) < 1e-6 * float(r["iops"]) + 1e-9
    assert {r["total_oio"] for r in rows} == {"1", "16"}
    raw = run / "raw"
    assert len(list(raw.glob("*__r?.measure.json"))) == 8  # one fio run per cell and repeat: warm-up + window
    assert len(list(raw.glob("*__r?.window.json"))) == 8  # the window, its statuses subtracted
    assert not list(raw.glob("*__r?.warmup*"))  # no warm-up of its own
    assert len(list(raw.glob("*__r?.measure.local1.fio"))) == 8
    lines = (run / "records.jsonl").read_text().splitlines()
    assert len(lines) == 8 and not (run / "records").exists()
    rundir = RunDir.open(run)
    rec = next(r for r in rundir.records() if r.cell_id == "tr3808-4k__io_uring__h1s2q8__r1")
    assert rec.raw_output == "raw/tr3808-4k__io_uring__h1s2q8__r1.measure.json"
    assert rec.coords == {"workload": "tr3808-4k", "configuration": "io_uring", "load": 1, "repeat": 1}
    assert rec.host_names == ["local1"] and list(rec.result.per_host_iops) == ["local1"]
    assert figures(rec).cpu_us_per_io_loadgen > 0 and figures(rec).cpu_us_per_io_total > 0
    # the warm-up ends at fio's status nearest 1 s of the jobs' runtime
    assert rec.warmup.mode == "fixed" and rec.warmup.ended_by == "time" and 0.5 <= rec.warmup.seconds <= 1.5
    # a status every second: a 2 s window is two samples
    series = rundir.series()[rec.seq]["all"]
    assert len(series) == 2 and all(abs(v / rec.result.iops - 1) < 0.25 for v in series)
    assert rundir.series()[rec.seq]["local1"] == series
    assert (data / "protolab.dat").stat().st_size == 32 * 2**20 and (data / "protolab.dat.protolab").exists()
    # The terminal summary: baseline = 100 at each load point, the others with their interval (2 repeats: the
    # repeats' range, not tested), then the findings.
    out = p.stdout
    assert (out.count(" 100 ") >= 2 or out.count("IOPS %: 100") >= 2) and "baseline psync = 100" in out
    assert "[the repeats' range, not tested]" in out and re.search(r"\[range \d+–\d+, not tested\]", out)
    assert re.search(r"^• tr3808-4k: .* not tested \(2 repeats; 3 needed\)\.$", out, re.M)
    assert not list(run.rglob("*.tmp"))  # atomic writes leave no temporaries


def test_failure_mid_run_keeps_measured_cells(tmp_path, cli):
    """A configuration whose storage cannot be reached stops the run in one line; earlier cells stay."""
    data = tmp_path / "data"
    data.mkdir()
    extra = '[[configurations]]\nname = "gone"\ntarget = { url = "nbd://127.0.0.1:9", allow_overwrite = true }'
    plan = tmp_path / "p.toml"
    plan.write_text(_plan(data, duration="1s", more="prepare = false\n" + extra))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=300)
    assert p.returncode == 2
    line = p.stderr.strip().splitlines()
    assert len(line) == 1 and line[0].startswith("protolab: error: cell tr3808-4k__gone__h1s1q1__r1: fio failed: fio: nbd_connect_uri")
    run = next((tmp_path / "results").iterdir())
    assert f"({run}: 2 cells measured so far are kept; 'protolab resume {run}' measures the rest)" in line[0]
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "failed" and "gone" in m["error"]
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert [r["configuration"] for r in rows] == ["psync", "io_uring"]
    assert all(float(r["iops"]) > 0 for r in rows)


def test_initialise_once_and_warm_up_until_steady(tmp_path, cli):
    """The data is initialised once per study; the warm-up ends when IOPS is steady or at its maximum,
    and the record says which."""
    data = tmp_path / "data"
    data.mkdir()
    method = ('warmup_until_steady = true\nsteady_window = 3\n'
              'initialise = { workload = "tr3808-init", duration = "2s", streams = 2 }')
    plan = tmp_path / "p.toml"
    plan.write_text(_plan(data, more=method, warmup='"15s"', repeats="1", load_points="[{ streams = 1, oio = 1 }]"))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=300)
    assert p.returncode == 0, p.stderr
    run = next((tmp_path / "results").iterdir())
    m = json.loads((run / "manifest.json").read_text())
    assert m["initialised"]["workload"] == "tr3808-init" and m["initialised"]["duration_s"] == 2
    assert list(m["initialised"]["iops"].values())[0] > 0
    assert len(list((run / "raw").glob("*.initialise.json"))) == 1  # once per study, not per cell
    rundir = RunDir.open(run)
    warm_series = rundir.series("warmup")
    for rec in rundir.records():
        warm = rec.warmup
        assert warm.mode == "until-steady" and warm.ended_by in ("steady", "maximum")
        assert len(warm_series[rec.seq]["all"]) >= 3 and warm.verdict.window == 3
        if warm.ended_by == "steady":
            assert warm.verdict.steady and warm.seconds <= 15
            assert warm.verdict.range_pct <= 20 and warm.verdict.excursion_pct <= 10
        else:
            assert abs(warm.seconds - 15) <= 0.5 and not warm.verdict.steady  # the status nearest 15 s
