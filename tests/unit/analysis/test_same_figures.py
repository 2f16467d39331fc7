"""Refactoring keeps the figures: stored runs report the same cells.csv, tables and findings as when their
expectations were written (tests/data/golden/<run>/, made by protolab before issue 22's changes).

A newer protolab may add columns or files; every expected column of every expected file must still be there with
the same values, row for row.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from conftest import DATA
from protolab.report.report_cli import write_report
from protolab.results.rundir import RunDir

DATA = DATA
GOLDEN = DATA / "golden"
RUNS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def _source(name: str) -> Path:
    own = GOLDEN / name / "run"
    return own if own.is_dir() else DATA / name


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", RUNS)
def test_a_stored_run_reports_the_same_figures(name, tmp_path):
    run = tmp_path / name
    shutil.copytree(_source(name), run)
    write_report(RunDir.open(run), figures=False)
    expected = GOLDEN / name / "expected"
    files = sorted(p.relative_to(expected) for p in expected.rglob("*.csv"))
    assert files, f"no expectations for {name}"
    for rel in files:
        want, got_path = _rows(expected / rel), run / rel
        assert got_path.is_file(), f"{name}: {rel} is no longer written"
        got = _rows(got_path)
        assert len(got) == len(want), f"{name}: {rel} has {len(got)} rows, expected {len(want)}"
        for i, (w, g) in enumerate(zip(want, got)):
            for col, value in w.items():
                assert col in g, f"{name}: {rel} lost the column {col!r}"
                assert g[col] == value, f"{name}: {rel} row {i + 1} column {col!r}: {g[col]!r}, expected {value!r}"
