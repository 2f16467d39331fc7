"""The metric registry (protolab.metrics) is the one place a metric is named: figures, findings, tables, charts,
seed claims and cells.csv all follow it."""

from __future__ import annotations

import csv
import shutil

import pytest
from pydantic import ValidationError

from conftest import DATA
from protolab import metrics
from protolab.analysis.derived import Figures
from protolab.analysis.findings import METRICS as COMPARED
from protolab.plan.seed import SEED_METRICS
from protolab.report.report_cli import write_report
from protolab.results.rundir import RunDir, csv_columns

V1 = DATA / "v1-run"


def test_every_derived_figure_is_named_by_the_registry():
    named = {m.field for m in metrics.METRICS.values() if m.source == "figures"} | set(metrics.FIGURES)
    assert set(Figures.model_fields) == named
    with pytest.raises(ValidationError):
        Figures(cpu_us_per_io_sever=3.0)  # a misspelt figure is an error, not silently dropped


def test_every_metric_has_a_cells_csv_column_and_seed_claims_take_the_compared_ones():
    columns = csv_columns()
    assert all(k in columns for k in metrics.METRICS)
    assert {"cpu_us_per_io_hypervisor", "cpu_us_per_io_guest", "hypervisor_cpu_s"} <= set(columns)
    assert list(COMPARED) == metrics.compared() and set(SEED_METRICS) == set(COMPARED)
    assert metrics.METRICS["lat_p99_us"].above == "more latency" and metrics.METRICS["iops"].above == "more IOPS"


def test_a_metric_added_to_the_registry_alone_reaches_cells_csv_the_tables_and_the_report(tmp_path, monkeypatch):
    p95 = metrics.Metric("lat_p95_us", "p95 service time", "µs", "p95 µs", "p95 service time", "higher", "lower",
                         "lower", "percentile", "p95")
    monkeypatch.setitem(metrics.METRICS, "lat_p95_us", p95)
    run = tmp_path / "run"
    shutil.copytree(V1, run)
    write_report(RunDir.open(run), figures=False)
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert all(float(r["lat_p95_us"]) > 0 for r in rows)
    table = list(csv.DictReader((run / "tables" / "lat_p95_us-tr3808-4k.csv").open()))
    assert {r["configuration"] for r in table} == {"local", "iscsi-1500", "nbd-1500"}
    local = next(r for r in table if r["configuration"] == "local")
    assert local["% of baseline"] == "100"
    md = (run / "report.md").read_text()
    assert "p95 µs" in md and "p95 service time" in (run / "tables" / "findings.csv").read_text()


def test_a_reader_gives_what_each_metrics_getter_gives():
    from protolab.analysis.metric_values import GETTERS, reader

    records = RunDir.open(V1, write=False).records()
    keys = list(metrics.METRICS)
    read = reader(keys)
    got = [read(r) for r in records]
    assert got == [[GETTERS[k](r) for k in keys] for r in records]
    assert any(v is not None for row in got for v, k in zip(row, keys) if metrics.METRICS[k].source == "figures")
    assert reader([])(records[0]) == []
