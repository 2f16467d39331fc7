"""A long window on a local file with real fio, stopped half-way by SIGTERM: its intervals stay on disk up to the
last one, `protolab resume` measures it again, and the report reads the series (onset, change per hour, SLO)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

PLAN = """
name = "longrun"
baseline = "psync"
workloads = ["tr3808-4k"]
[targets.scratch]
url = "{dir}"
[[configurations]]
name = "psync"
target = "scratch"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "1s"
duration = "20s"
repeats = 1
data_size = "32M"
slo = {{ p95 = "1ms" }}
"""


def _measure_rows(run):
    with (run / "series.csv").open() as f:
        return [r for r in csv.DictReader(f) if r["phase"] == "measure" and r["host"] == "all"]


def test_sigterm_half_way_keeps_the_intervals_and_resume_measures_the_window_again(tmp_path, fio_path):
    data = tmp_path / "data"
    data.mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dir=data))
    results = tmp_path / "r"
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.Popen([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(results)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        seen, end = [], time.monotonic() + 240
        while time.monotonic() < end and p.poll() is None:
            runs = list(results.glob("*/series.csv"))
            if runs:
                seen = _measure_rows(runs[0].parent)
                if len(seen) >= 8:  # 8 of the window's 20 intervals are on disk: stop it half-way
                    break
            time.sleep(0.2)
        assert len(seen) >= 8, f"the window never reached 8 intervals (exit {p.poll()})"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143 and "Traceback" not in err, err
    run = next(results.iterdir())
    kept = _measure_rows(run)
    # every interval seen before the signal is still there, in order, each with merged latencies; fewer than 20
    assert kept[:len(seen)] == seen and len(seen) <= len(kept) < 20
    # each interval ends at the jobs' I/O time of fio's status, one a second: in order, each near its second (a status
    # comes when the job's thread wakes: 0.105 s late beside make test's lab lanes, 2026-12-07)
    ends = [float(r["t_s"]) for r in kept]
    assert ends == sorted(ends) and ends == pytest.approx([float(i) for i in range(1, len(kept) + 1)], abs=0.5)
    assert all(r["seq"] == "1" and r["session"] == "1" and float(r["lat_p95_us"]) > 0 and float(r["mbps"]) > 0
               and float(r["lat_p99_us"]) >= float(r["lat_p95_us"]) for r in kept)
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "interrupted" and m["measuring"]["seq"] == 1 and m.get("cells_done", 0) == 0

    r = subprocess.run([sys.executable, "-m", "protolab.cli", "resume", str(run)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = _measure_rows(run)
    assert rows[:len(kept)] == kept  # the interrupted session's intervals are kept as they were
    again = [x for x in rows if x["seq"] == "2"]
    # the window ends at the status nearest 20 s of the jobs' I/O time: on a busy machine statuses come a little
    # more than 1 s of I/O time apart, and the 19th can be the nearest
    n = len(again)
    assert 19 <= n <= 21 and {x["session"] for x in again} == {"2"}
    recs = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    assert [(x["seq"], x["session"], x["status"]) for x in recs] == [(2, 2, "ok")]
    # the series is the window's: its intervals' I/Os are the window's, over the window's time
    res = recs[0]["result"]
    assert sum(int(x["ios"]) for x in again) == res["read"]["ios"] + res["write"]["ios"]
    weighted = sum(int(x["ios"]) for x in again) / sum(float(x["seconds"]) for x in again)
    assert abs(weighted / res["iops"] - 1) < 0.02
    html = (run / "report.html").read_text()
    assert f"long run of psync at 1×1×1=1 (repeat 1, {n} intervals over {n} s)" in html
    assert "%/h" in html and "p95 over 1 ms in " in html
    assert (f"the window of tr3808-4k__psync__h1s1q1__r1 in session 1 was interrupted; its {len(kept)} intervals "
            "are kept in series.csv (seq 1); it was measured again whole in a later session") in html
    assert (run / "figures" / "longrun-lat_p95_us-tr3808-4k-1-1-1-1.png").stat().st_size > 1000
