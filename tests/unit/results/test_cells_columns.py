"""cells.csv carries every figure the report uses: each metric a finding names is a column, the VM run's controller
and hypervisor/guest CPU per I/O have a value in every row, and stages (fill level, age) are columns of their own."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from conftest import DATA
from protolab.report.report_cli import write_report
from protolab.results.rundir import RunDir

GOLDEN = DATA / "golden"
#: Every stored run directory under tests/data (a golden case keeps its run in run/, the others are runs).
STORED = {**{p.name: p / "run" for p in sorted(GOLDEN.iterdir()) if (p / "run").is_dir()},
          **{p.name: p for p in sorted(DATA.iterdir()) if (p / "manifest.json").is_file()}}


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> dict[str, Path]:
    """Each stored run copied and reported (cells.csv and tables/findings.csv written by today's protolab)."""
    root = tmp_path_factory.mktemp("stored")
    out = {}
    for name, src in STORED.items():
        shutil.copytree(src, root / name)
        write_report(RunDir.open(root / name), figures=False)
        out[name] = root / name
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_stored_runs_are_the_ones_expected():
    assert {"emc-fill-aging-quick", "exchange-quick", "tr3916-vm-quick", "v1-run", "v2-run"} <= set(STORED)


@pytest.mark.parametrize("name", sorted(STORED))
def test_every_metric_a_finding_names_is_a_cells_csv_column(reported, name):
    run = reported[name]
    findings = _rows(run / "tables" / "findings.csv")
    named = {m for f in findings for m in f["metric"].split(",") if m}
    assert named, f"{name}: no finding names a metric"
    cells = _rows(run / "cells.csv")
    columns = set(cells[0])
    assert named <= columns, f"{name}: findings name {sorted(named - columns)}, which cells.csv lacks"
    for m in named:  # and the column has the figures the findings were made from
        assert any(r[m] != "" for r in cells), f"{name}: cells.csv's {m} is empty in every row"


def test_the_vm_run_has_its_controller_and_hypervisor_and_guest_cpu_in_every_row(reported):
    cells = _rows(reported["tr3916-vm-quick"] / "cells.csv")
    assert len(cells) == 12
    controllers = {r["configuration"]: r["controller"] for r in cells}
    assert controllers == {"lsi-iscsi": "lsi", "pvscsi-iscsi": "pvscsi", "virtio-scsi-iscsi": "virtio-scsi",
                           "virtio-blk-iscsi": "virtio-blk"}
    for r in cells:
        hv, guest = float(r["cpu_us_per_io_hypervisor"]), float(r["cpu_us_per_io_guest"])
        assert hv > 0 and guest > 0 and float(r["hypervisor_cpu_s"]) > 0
        assert float(r["cpu_us_per_io_hv_vcpu"]) > 0 and float(r["cpu_us_per_io_hv_io"]) > 0  # QEMU's threads


def test_stages_are_columns_of_their_own(reported):
    cells = _rows(reported["emc-fill-aging-quick"] / "cells.csv")
    assert {"fill", "stage", "age_s"} <= set(cells[0])
    assert all(r["fill"] in ("10", "25", "50", "100") for r in cells)  # every window's fill level
    aged = [r for r in cells if r["stage"] == "age"]
    assert len(aged) == 12 and {r["fill"] for r in aged} == {"25"}
    assert sorted({int(r["age_s"]) for r in aged}) == [0, 10] and all(r["age_s"] == "" for r in cells
                                                                        if r["stage"] != "age")
