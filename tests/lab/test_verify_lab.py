"""method.verify on the real lab with real fio (plan.verify, engine.readback): every block written through the local
path and NBD is read back after each window and found intact; a block the pool's device model corrupts between a
window and its read-back is found, at its offset, in the record, cells.csv and the report."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from conftest import family_prefix, lab_workdir, run_plan
from protolab.plan.load import load_plan_text
from protolab.run import Study

pytestmark = pytest.mark.lab
# its own prefix (PROTOLAB_TEST_LAB_PREFIX + "y" when set, so parallel sessions never share one)
PREFIX = family_prefix("y")
MIB = 2**20

PLAN = f"""
name = "verify-lab"
baseline = "local"
workloads = [{{ name = "mixed-4k", block_size = "4k", read_pct = 50, random_pct = 100, oio = 4 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "384M"
export_size = "32M"
[lab.storage]
model = "flash"
[[configurations]]
name = "local"
target = "lab:local"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
streams = 2
[method]
warmup = "1s"
duration = "2s"
repeats = 1
verify = "crc32c"
"""


@pytest.fixture
def workdir(request):
    yield from lab_workdir(PREFIX, f"verify-{request.node.name[:24]}")


def test_every_block_written_through_the_local_path_and_nbd_reads_back_intact(workdir, tmp_path):
    run = run_plan(PLAN, workdir, tmp_path, "verify")
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    assert sorted(r["coords"]["configuration"] for r in records) == ["local", "nbd"]
    for r in records:
        v = r["verification"]
        # both streams' regions, every 4 KiB chunk read back and checked: the whole export, 32 MiB
        assert (v["algorithm"], v["chunk"], v["verified_bytes"]) == ("crc32c", 4096, 32 * MIB), v
        assert (v["mismatches"], v["first_bad_offset"], v["during_window"], v["errors"]) == (0, None, 0, []), v
        assert r["status"] == "ok" and r["result"]["errors"] == 0
        # fio read back what it wrote during the window too: its reads outnumber the workload's half
        assert r["result"]["read"]["ios"] > r["result"]["write"]["ios"] > 0
        job = (run / f"raw/{r['cell_id']}.readback.{r['host_names'][0]}.fio").read_text()
        assert "rw=read" in job and "bs=4096" in job and "verify=crc32c" in job
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert [(r["verified_mib"], r["mismatches"], r["first_bad_offset"]) for r in rows] == [("32.0", "0", "")] * 2
    md = (run / "report.md").read_text()
    assert "- local: 32 MiB verified (crc32c, 1 window), 0 mismatches" in md
    assert "- nbd: 32 MiB verified (crc32c, 1 window), 0 mismatches" in md


#: A chunk of stream 0's region of the NBD export (5 MiB + 8 KiB): written with its checksum by the prepare or the
#: window, and read back after the window.
BAD = 5 * MIB + 8192


def _pool_offset(lab, data_file: Path, offset: int) -> int:
    """Where the 4 KiB of ``data_file`` at ``offset`` lie in the pool's image (the device model's disk): found by
    their bytes, which are unique (fio's header holds the chunk's offset and a random seed)."""
    import mmap

    os.sync()  # the data file's pages and the pool's on the image
    fd = os.open(data_file, os.O_RDONLY)
    try:
        chunk = os.pread(fd, 4096, offset)
        # the page read here must not answer nbdkit's read-back: the device model's corrupted bytes must
        os.posix_fadvise(fd, offset, 4096, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    with (lab.workdir / lab.names.pool_image).open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(chunk)
        assert at >= 0 and m.find(chunk, at + 1) < 0, "the chunk is once in the pool's image"
    return at


def test_a_block_the_device_model_corrupts_after_the_window_is_found_at_its_offset(workdir, tmp_path):
    corrupted: list[int] = []

    def on_cell(stage, cell, testbed):
        if stage == "done" and cell.configuration.name == "nbd":  # after the window, before its read-back
            lab = testbed.lab
            at = _pool_offset(lab, lab.export_file("nbd"), BAD)
            lab.faults.corrupt(at + 100, 16)  # 16 bytes inside the chunk: its checksum fails
            corrupted.append(at)

    text = PLAN
    rundir = Study(load_plan_text(text), text, "test", results_root=tmp_path / "r", lab_workdir=workdir,
                   on_cell=on_cell).run()
    assert len(corrupted) == 1
    from protolab.report.report_cli import write_report

    write_report(rundir, figures=False)
    recs = {r.configuration: r for r in rundir.records()}
    assert recs["local"].verification.mismatches == 0
    v = recs["nbd"].verification
    assert (v.mismatches, v.first_bad_offset, v.bad_offsets, v.during_window) == (1, BAD, [BAD], 0), v
    assert v.verified_bytes == 32 * MIB and recs["nbd"].status == "ok"
    rows = {r["configuration"]: r for r in csv.DictReader((rundir.path / "cells.csv").open())}
    assert (rows["nbd"]["mismatches"], rows["nbd"]["first_bad_offset"]) == ("1", str(BAD))
    assert (rows["local"]["mismatches"], rows["local"]["first_bad_offset"]) == ("0", "")
    md = (rundir.path / "report.md").read_text()
    assert (f"- nbd: 32 MiB verified (crc32c, 1 window), 1 mismatch, the first bad offset {BAD:,} "
            f"(cell {recs['nbd'].cell_id})") in md
