"""Latency heatmaps in the report (plan.heatmap_option, report.heatmapdata): a run directory with heatmap/<cell>.json
files gets the section, its figures and tables; the figure draws the counts it is given."""

from __future__ import annotations

import csv
import shutil

from conftest import DATA
from protolab.analysis.heatmap import bin_window
from protolab.engine.histlog import bin_edges_ns, read_hist_logs
from protolab.report.heatmapdata import heatmap_chart
from protolab.report.report_cli import write_report
from protolab.results.heatmapfile import write_heatmap
from protolab.results.rundir import RunDir


def _real():
    return bin_window(read_hist_logs(DATA / "fio-histlog" / "hl")[:2], bin_edges_ns(), t0_ms=300.0, window_ms=1000.0,
                      step_ms=100)


def test_the_figure_draws_each_step_and_row_with_its_count():
    from protolab.report.figures import figure

    hm = _real()
    chart = heatmap_chart(hm, cid="h", section="heatmap", workload="w", title="t", note="", span=(0.2, 0.4))
    fig = figure(chart)
    ax = fig.axes[0]
    [mesh] = ax.collections
    drawn = mesh.get_array()
    assert drawn.shape == (hm.rows, len(hm.counts))
    for k, col in enumerate(hm.counts):
        for i, n in enumerate(col):
            assert (drawn.mask[i, k] if n == 0 else drawn[i, k] == n)
    assert ax.get_yscale() == "log" and len(fig.axes) == 2  # the colour bar
    assert fig.axes[1].get_ylabel() == "I/Os completed"
    hatched = [p for p in ax.patches if p.get_hatch() == "//"]
    box = hatched[0].get_extents().transformed(ax.transData.inverted())
    assert len(hatched) == 1 and (round(box.x0, 6), round(box.x1, 6)) == (0.2, 0.4)


def test_a_run_with_heatmaps_has_their_section_figures_and_tables(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "capacity-lab" / "run", run)
    rd = RunDir.open(run)
    hm = _real()
    records = rd.records()
    for r in records:
        write_heatmap(run, r.cell_id, hm)
    write_report(rd)
    md, page = (run / "report.md").read_text(), (run / "report.html").read_text()
    assert "## Latency heatmaps over time" in md and '<section id="heatmap">' in page
    top = max(r.total_oio for r in records)
    configurations = sorted({r.configuration for r in records if r.total_oio == top})
    tables = sorted((run / "tables").glob("heatmap-*.csv"))
    assert len(tables) == len(configurations) >= 2
    for t in tables:
        assert f"`tables/{t.name}`" in md and (run / "figures" / f"{t.stem}.svg").is_file()
        rows = list(csv.DictReader(t.open()))
        repeats = len({r.repeat for r in records if r.total_oio == top and t.stem.endswith("-" + r.configuration)})
        assert sum(int(r["ios"]) for r in rows) == repeats * hm.total()
    svg = (run / "figures" / f"{tables[0].stem}.svg").read_text()
    assert "<image" in svg  # the mesh rasterised: a few KiB, not a path per step and row
