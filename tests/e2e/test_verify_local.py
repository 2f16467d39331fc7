"""method.verify with the real fio on a local file: a clean window reads back every block of its regions with no
mismatch, and 8 bytes overwritten between a window and its read-back are found at their chunk's offset in the
record, cells.csv, the report and `report --json`."""

from __future__ import annotations

import csv
import os

from protolab.engine.fio import Fio
from protolab.plan.load import load_plan_text
from protolab.report.report_cli import report_json, write_report
from protolab.run import Study

PLAN = """name = "verify-local"
baseline = "a"
workloads = [{ name = "w", block_size = "4k", read_pct = 50, random_pct = 100, oio = 4 }]
load_points = [{ streams = 2 }]
[method]
warmup = "1s"
duration = "1s"
repeats = 2
data_size = "8M"
verify = "md5"
[[configurations]]
name = "a"
target = "./t.dat"
ioengine = "libaio"
"""
BAD = 2**20 + 8192  # a 4 KiB chunk of stream 0's region (0 to 4 MiB)


def test_a_block_overwritten_after_a_window_is_found_at_its_offset_and_the_other_window_is_clean(
        fio_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def on_cell(stage, cell, testbed):
        if stage == "done" and cell.repeat == 2:  # after the window, before its read-back
            fd = os.open(tmp_path / "t.dat", os.O_WRONLY)
            try:
                os.pwrite(fd, b"CORRUPT!", BAD + 100)
                os.fsync(fd)
            finally:
                os.close(fd)

    rundir = Study(load_plan_text(PLAN), PLAN, "v.toml", results_root=tmp_path / "r", fio=Fio(fio_path),
                   on_cell=on_cell).run()
    recs = {r.repeat: r for r in rundir.records()}
    clean, bad = recs[1].verification, recs[2].verification
    assert (clean.algorithm, clean.chunk, clean.verified_bytes, clean.mismatches) == ("md5", 4096, 8 * 2**20, 0)
    assert (bad.verified_bytes, bad.mismatches, bad.first_bad_offset, bad.bad_offsets) == (8 * 2**20, 1, BAD, [BAD])
    assert recs[2].status == "ok" and recs[2].result.errors == 0
    rows = {r["repeat"]: r for r in csv.DictReader((rundir.path / "cells.csv").open())}
    assert (rows["1"]["verified_mib"], rows["1"]["mismatches"], rows["1"]["first_bad_offset"]) == ("8.0", "0", "")
    assert (rows["2"]["mismatches"], rows["2"]["first_bad_offset"]) == ("1", str(BAD))
    path = write_report(rundir, figures=False)
    md = (rundir.path / "report.md").read_text()
    assert (f"- a: 16 MiB verified (md5, 2 windows), 1 mismatch, the first bad offset {BAD:,} "
            f"(cell {recs[2].cell_id})") in md
    [v] = report_json(rundir, path)["verified"]
    assert (v["verified_mib"], v["mismatches"], v["first_bad_offset"]) == (16.0, 1, BAD)
