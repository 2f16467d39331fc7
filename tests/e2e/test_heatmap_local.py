"""`[method] heatmap = true` through `protolab run` on a local file: a direct run (1 host) and a client run of two fio
servers (2 hosts) each keep a heatmap per window whose counts are the window's I/Os, fio's logs are removed, and the
report draws one heatmap per configuration at the highest load point."""

from __future__ import annotations

import json

from conftest import shared_plan
from protolab.results.heatmapfile import read_heatmaps
from protolab.results.rundir import RunDir


def test_heatmaps_from_direct_and_client_runs(tmp_path, cli):
    data = tmp_path / "data"
    data.mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(shared_plan("psync-io_uring", name='"heatmap"', url=f'"{data}"', duration='"2s"', repeats="1",
                                load_points="[{ streams = 1, oio = 4 }, { hosts = 2, streams = 1, oio = 4 }]")
                    + "heatmap = true\n")
    p = cli("run", plan, "--results", tmp_path / "results", timeout=300)
    assert p.returncode == 0, p.stderr
    run = next((tmp_path / "results").iterdir())
    records = RunDir.open(run).records()
    maps = read_heatmaps(run, [r.cell_id for r in records])
    assert sorted(maps) == sorted(r.cell_id for r in records) and len(maps) == 4
    for r in records:
        hm = maps[r.cell_id]
        assert hm.step_ms == 100 and len(hm.counts) == 20 and hm.jobs == r.hosts * r.streams_per_host
        ios = r.result.iops * 2.0  # fio's own count of the 2 s window
        # each window's completions, placed by fio's log times on protolab's window (a step at either end)
        assert abs(hm.total() - ios) <= 0.08 * ios, (r.cell_id, hm.total(), ios)  # 0.1–1.5 % on 2026-12-07
        assert sum(1 for c in hm.counts if sum(c)) >= 18  # I/O in every step but perhaps the ends
    assert not list((run / "raw").glob("*_clat_hist*"))  # fio's logs removed once kept
    assert max(p.stat().st_size for p in (run / "heatmap").iterdir()) < 16 * 1024
    md = (run / "report.md").read_text()
    assert "## Latency heatmaps over time" in md
    charts = sorted((run / "tables").glob("heatmap-*.csv"))
    assert [c.name for c in charts] == ["heatmap-tr3808-4k-1-io_uring.csv", "heatmap-tr3808-4k-1-psync.csv"]
    assert '<section id="heatmap">' in (run / "report.html").read_text()
    assert json.loads((run / "manifest.json").read_text())["plan"]["method"]["heatmap"] is True
