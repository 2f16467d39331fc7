"""Warm-up until steady and the measured window in ONE fio run per repeat, over real tgt (iSCSI).

The connections the window measures are the ones the warm-up warmed: each load stream logs in to
tgtd once per repeat. Counted from the storage side with `ss` while each cell runs.
"""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from test_study import config, plan_text, study, workdir  # noqa: F401  (fixture)

from protolab.engine.status import documents, snapshots

pytestmark = pytest.mark.lab


class Logins:
    """Distinct TCP connections to tgtd's port 3260 seen while a cell runs (sampled every 0.2 s)."""

    def __init__(self):
        self.per_cell: dict[str, set[str]] = {}
        self._stop = threading.Event()
        self._thread = None

    def hook(self, stage, cell, testbed):
        if stage == "ready":
            seen = self.per_cell.setdefault(cell.id, set())
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, args=(testbed.lab.names.storage_ns, seen))
            self._thread.start()
        elif stage == "done":
            self._stop.set()
            self._thread.join()

    def _watch(self, ns, seen):
        while not self._stop.wait(0.2):
            out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htn", "state", "established",
                                  "( sport = :3260 )"], capture_output=True, text=True, timeout=10).stdout
            seen.update(line.split()[-1] for line in out.splitlines() if line.strip())  # the initiator's addr:port


def test_until_steady_warmup_and_window_share_one_fio_run_and_its_logins(workdir, tmp_path):
    logins = Logins()
    text = plan_text(config("iscsi", "lab:iscsi"), workload='{ name = "tr3808-4k", read_pct = 100 }',
                     load="streams = 2\noio = 2",
                     method='warmup = "20s"\nwarmup_until_steady = true\nsteady_window = 3\nduration = "3s"\n'
                            'repeats = 2\ndata_size = "64M"')
    rundir = study(text, workdir, tmp_path, on_cell=logins.hook).run()
    recs = rundir.records()
    assert len(recs) == 2
    raw = rundir.path / "raw"
    for r in recs:
        # one fio run: one job file, one output holding the warm-up's and the window's status documents
        assert [p.name for p in raw.glob(f"{r.cell_id}.*.fio")] == [f"{r.cell_id}.measure.h1.fio"]
        # 20 s at most + 3 s + 10 s to spare: fio is stopped at the window's end
        assert "runtime=33\n" in (raw / f"{r.cell_id}.measure.h1.fio").read_text()
        snaps = snapshots(documents((rundir.path / r.raw_output).read_text()))["local"]
        w = r.warmup
        assert w.mode == "until-steady" and w.ended_by in ("steady", "maximum") and 0 < w.seconds <= 20.5
        assert len(snaps) >= w.seconds + 3 - 1  # a status every second through the warm-up and the window
        # one iSCSI login per stream in this repeat: the window used the warm-up's connections
        assert len(logins.per_cell[r.cell_id]) == 2, logins.per_cell
        res = r.result
        assert res.errors == 0 and res.jobs == 2 and res.iops > 100
        assert 2.5 < res.runtime_s < 3.5
        assert res.percentiles_us["p50"] > 0 and res.percentiles_us["p99"] >= res.percentiles_us["p50"]
        # a status is not taken atomically with the jobs' progress: an I/O in flight may be in the histogram and
        # not yet in total_ios (or the other way), so the window's two counts agree within the I/Os in flight
        assert abs(sum(res.read.bins_ns.values()) - res.read.ios) <= 2 * 2
        # telemetry spans the window only (sampled when its first and last statuses appeared), not the warm-up
        # (at least 2.9 s: the steady window's 3 statuses); each sample runs `ip` and `ethtool`, which a busy
        # 2-core machine can delay by a few hundred ms
        assert 2.5 < r.telemetry.elapsed_s < 4.0 < 3.0 + w.seconds, r.telemetry.elapsed_s
        assert r.telemetry.roles_cpu_s.get("loadgen", 1) > 0
        window = json.loads((raw / f"{r.cell_id}.window.json").read_text())
        assert sum(j["read"]["total_ios"] for j in window["jobs"]) == res.read.ios
        print(f"{r.cell_id}: warm-up {w.ended_by} after {w.seconds:.2f}s ({w.verdict.reason}); window "
              f"{res.runtime_s:.2f}s {res.iops:.0f} IOPS p50 {res.percentiles_us['p50']:.0f} us "
              f"p99 {res.percentiles_us['p99']:.0f} us; telemetry {r.telemetry.elapsed_s:.2f}s; "
              f"logins {sorted(logins.per_cell[r.cell_id])}")
    # the two repeats used different connections (each repeat is its own fio run)
    a, b = (logins.per_cell[r.cell_id] for r in recs)
    assert not a & b
    rows = (rundir.path / "series.csv").read_text().splitlines()
    assert any(",warmup," in row for row in rows) and any(",measure," in row for row in rows)
