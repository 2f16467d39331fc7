"""`[method] drop_caches = true` on this machine for real (run.caches): a file written through the page cache is
resident before the run; the cell's record says its drop freed at least that much of /proc/meminfo's Cached, the file
is no longer resident in whole after the run, and the report's method section says the caches were dropped."""

from __future__ import annotations

import html
import json
import os
import subprocess

import pytest

from protolab.results.rundir import RunDir

MIB = 2**20
SIZE = 64 * MIB

PLAN = """name = "drop-caches"
baseline = "buffered"
workloads = [{{ name = "4k-randread", block_size = "4k", read_pct = 100, random_pct = 100, oio = 1 }}]
[[configurations]]
name = "buffered"
target = {{ url = "{file}", allow_overwrite = true }}
ioengine = "psync"
direct = false
[[load_points]]
streams = 1
oio = 1
[method]
warmup = 0
duration = "1s"
repeats = 1
prepare = false
data_size = "64M"
drop_caches = true
"""


def _resident(path) -> int:
    """Bytes of ``path`` in the page cache (util-linux fincore)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    return int(out.split()[0])


def test_a_run_drops_this_machines_page_cache_before_its_cell_and_records_it(tmp_path, cli):
    if os.geteuid() != 0:
        pytest.skip("only root may drop the page cache")
    data = tmp_path / "data.dat"
    with open(data, "wb") as f:  # through the page cache, written back: clean pages a drop frees
        for _ in range(SIZE // MIB):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())
    assert _resident(data) == SIZE
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(file=data))
    p = cli("run", plan, "--results", tmp_path / "r", timeout=300)
    assert p.returncode == 0, p.stderr
    [run] = list((tmp_path / "r").iterdir())
    [rec] = RunDir.open(run, write=False).records()
    [drop] = rec.caches_dropped
    freed = (drop.cached_kib_before - drop.cached_kib_after) * 1024
    read = rec.result.read.bytes
    figures = f"Cached {drop.cached_kib_before} → {drop.cached_kib_after} KiB, the window read {read} bytes"
    assert drop.host == "this-machine" and freed >= SIZE, figures  # our file's 64 MiB went, with whatever else
    # after the run only what the window read back is resident (readahead aside), not the file written before it
    assert _resident(data) < SIZE, figures
    stored = json.loads((run / "records.jsonl").read_text().splitlines()[0])["caches_dropped"]
    assert stored == [{"host": "this-machine", "cached_kib_before": drop.cached_kib_before,
                       "cached_kib_after": drop.cached_kib_after}]
    md, page = (run / "report.md").read_text(), html.unescape((run / "report.html").read_text())
    said = "Page caches dropped before 1 of 1 windows (sync; echo 3 > /proc/sys/vm/drop_caches)"
    assert said in md and said in page
    assert "page caches dropped before each cell (the load hosts)" in md
