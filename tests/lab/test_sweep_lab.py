"""A swept service time through a whole real run (plan.sweep): one lab, the model changed between cells, cells.csv
carrying the coordinate and the model in effect, each record the device model's own time in its window
(device_time), and the report's crossover and prediction recomputed from cells.csv alone (analysis.crossover), as a
reader without protolab's records would."""

from __future__ import annotations

import csv
import json
from collections import Counter
from statistics import median

import pytest

from conftest import family_prefix, lab_workdir, run_plan
from protolab.analysis.crossover import Obs, added_times, crossover, parallelism_of, sentence
from protolab.results.rundir import RunDir

pytestmark = pytest.mark.lab
PREFIX = family_prefix("w")
US = (0, 500)

PLAN = f"""
name = "sweep-lab"
baseline = "direct"
workloads = [{{ name = "4k-randread", block_size = "4k", read_pct = 100, random_pct = 100, oio = 1 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[lab.storage]
service_time = "0us"
parallelism = 16
[lab.link]
rate = "10GbE"
[sweep]
service_time = {json.dumps([f"{u}us" for u in US])}
[[configurations]]
name = "direct"
target = "lab:local"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "0.5s"
duration = "1s"
repeats = 3
data_size = "32M"
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "sweep")


def test_a_swept_run_changes_the_model_between_cells_and_its_crossover_is_recomputed_from_cells_csv(workdir, tmp_path):
    run = run_plan(PLAN, workdir, tmp_path, "sweep")
    rows = list(csv.DictReader((run / "cells.csv").open()))
    # every service time × configuration × repeat, the outer loop the service time, configurations interleaved
    assert [(int(r["service_time"]), r["configuration"]) for r in rows] == [
        (u, c) for u in US for _ in range(3) for c in ("direct", "iscsi")]
    assert {r["device_model"] for r in rows if r["service_time"] == "500"} == {"500us ×16, no throughput cap, "
                                                                               "no cache"}
    # the model in effect is the one measured: at 500 µs direct's reads take ~500 µs, at 0 µs a fraction of it (the
    # model's own bounds are test_service_sweep's; a window here is 1 s on a shared machine: 446–602 µs seen)
    lat = {u: [float(r["lat_mean_us"]) for r in rows if r["configuration"] == "direct" and r["service_time"] == str(u)]
           for u in US}
    assert all(400 < v < 800 for v in lat[500]) and max(lat[0]) < min(lat[500]) - 200, lat
    # the device model's own account of each window (its daemon's counters read with the window's telemetry): every
    # fio read is one request of the model's (the local path and tgt both read with O_DIRECT), so its rate over the
    # telemetry's interval is fio's IOPS (within 20 %: the two intervals are placed apart, 13 % once at load 29); at
    # 1 OIO none waits for one of its 16 servers and each is served for the swept service time, whatever the stack
    # added around it (fio's mean moves with the machine's load, the model's service much less: the median of a
    # cell's repeats, as at 1 OIO in test_device_model — at load 14 one window of three answered 11 % late)
    served: dict[tuple[str, int], list[float]] = {}
    said = []
    for r in RunDir.open(run, write=False).records():
        d, us, elapsed = r.device_time, int(r.coords["service_time"]), r.telemetry.elapsed_s
        said.append(f"{r.cell_id}: {d} in {elapsed:.3f} s, fio {r.result.iops:.0f} IOPS at {r.result.lat_mean_us:.1f} µs")
        assert d is not None and abs(d.reads / elapsed / r.result.iops - 1) <= 0.2 and d.writes <= 0.01 * d.reads, said
        assert d.queue_us <= 0.05 * max(us, 100), said
        served.setdefault((r.configuration, us), []).append(d.service_us)
    for (_, us), values in served.items():
        assert (abs(median(values) / us - 1) <= 0.10 if us else median(values) < 100), said
    # the crossover and the prediction from cells.csv alone, as the report states them
    obs = [Obs.of_row(r) for r in rows]
    added = added_times(obs, "direct")
    pts = crossover(obs, "direct", 0.09, parallelism=parallelism_of(rows[-1]["device_model"]), added=added)
    assert Counter(p.axis for p in pts) == {0: 1, 500: 1}
    a = added[("4k-randread", "iscsi")]
    assert a.at_us == 0 and a.o_us > 0  # iSCSI adds time per I/O over the direct path
    at500 = next(p for p in pts if p.axis == 500)
    # the model: d + s from direct's own latency at 500 µs, o from 0 µs
    d500 = sum(lat[500]) / 3 - 500
    assert at500.predicted == pytest.approx((500 + d500) / (500 + d500 + a.o_us))
    md = (run / "report.md").read_text()
    assert md.index("## Crossover") < md.index("## Summary")  # a sweep's report opens with its crossover
    assert sentence(pts, "direct", 0.09) in md
    assert f"{at500.predicted:.2f}" in md and f"iscsi adds {a.o_us:.0f} µs" in md
