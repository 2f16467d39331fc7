"""A link down under load through a whole real run (plan.faults): fio's libnbd engine on the lab's nbdkit, the storage
port's link down 2 s into the window for 3 s, `protolab run` as a user runs it. The measured stall (fio's 10 ms logs)
lies between the link's down time and what TCP's retransmission backoff adds to it: the connection survives the
outage (nothing resets it), and its next retransmission after the link comes back is at most one backoff period
later — each period doubles, so at most about the outage again (2 × 3 s) plus the first RTO. The window with no fault
stalls far less; the link is up again after (the next cell runs), and nothing of the lab is left behind. With
`[method] heatmap` the faulted window's latency heatmap is blank through the stall and is the report's latency panel.
"""

from __future__ import annotations

import csv
import json

import pytest

from conftest import family_prefix, lab_workdir, run_plan

pytestmark = pytest.mark.lab
PREFIX = family_prefix("o")
DOWN_S = 3.0

PLAN = f"""
name = "faults-lab"
baseline = "nbd"
workloads = [{{ name = "4k-rand70", block_size = "4k", read_pct = 70, random_pct = 100, oio = 4 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
streams = 1
[method]
warmup = "1s"
duration = "12s"
repeats = 1
data_size = "32M"
heatmap = true
[[faults]]
name = "port0-down"
kind = "link_down"
at = "2s"
duration = "{DOWN_S:g}s"
port = 0
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "faults")


def test_a_link_down_stalls_nbd_for_the_outage_plus_tcps_backoff_and_the_lab_is_restored(workdir, tmp_path):
    run = run_plan(PLAN, workdir, tmp_path, "faults")
    recs = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    by = {r["coords"]["fault"]: r for r in recs}
    assert set(by) == {"none", "port0-down"} and all(r["status"] == "ok" for r in recs)
    down = by["port0-down"]["fault"]
    assert [a["action"] for a in down["actions"]] == ["link_down port 0", "link_up port 0"]
    assert all(a["error"] is None for a in down["actions"])
    started, ended = (a["at_s"] for a in down["actions"])
    assert started == pytest.approx(2.0, abs=0.3) and ended - started == pytest.approx(DOWN_S, abs=0.3)
    assert down["restored"] == []  # the schedule brought the link up itself: nothing left to undo
    rows = {r["fault"]: r for r in csv.DictReader((run / "cells.csv").open())}
    stall = float(rows["port0-down"]["stall_ms"]) / 1000.0
    assert DOWN_S - 0.1 <= stall <= 2 * DOWN_S + 0.5, stall
    assert float(rows["none"]["stall_ms"]) / 1000.0 < 0.5 and int(rows["port0-down"]["io_errors"]) == 0
    # the stall is where the link was down: it starts within the fault's span
    from protolab.analysis.fault_figures import longest_stall

    _, at = longest_stall(down["iops"], down["step_ms"])
    assert started - 0.1 <= at <= ended, at
    md = (run / "report.md").read_text()
    assert "## Faults under load" in md and "After port0-down (port 0's link went down for 3 s at 2 s): nbd " \
        "stalled" in md
    # [method] heatmap: fio's histogram logs show no completion in the steps of 100 ms inside the stall, and the
    # faults' latency panel is the heatmap (the unfaulted window's in its own section)
    from protolab.results.heatmapfile import read_heatmaps

    cells = {k: r["cell_id"] for k, r in by.items()}
    maps = read_heatmaps(run, list(cells.values()))
    hm = maps[cells["port0-down"]]
    blank = {k for k, c in enumerate(hm.counts) if not sum(c)}
    inside = set(range(int(at * 10) + 1, int((at + stall) * 10) - 1))
    assert len(inside) >= 20 and inside <= blank, (sorted(inside - blank), at, stall)
    assert len(blank) <= len(inside) + 4 and not [k for k, c in enumerate(maps[cells["none"]].counts) if not sum(c)]
    assert "`tables/fault-4k-rand70-" in md and "-nbd-heatmap.csv`" in md and "## Latency heatmaps over time" in md
