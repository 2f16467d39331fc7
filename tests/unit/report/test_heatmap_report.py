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
    assert page.count('data-kind="heatmap" data-expected-series="0"') == len(tables)  # one mesh, no series lines
    svg = (run / "figures" / f"{tables[0].stem}.svg").read_text()
    assert "<image" in svg  # the mesh rasterised: a few KiB, not a path per step and row


def test_an_agings_steps_are_placed_at_their_aging_time_and_repeats_added():
    from types import SimpleNamespace

    from protolab.report.heatmapdata import placed
    from protolab.results.heatmapfile import Heatmap

    step = Heatmap(1000, 2000.0, 40, ((1, 2), (3,)), 1)

    def rec(repeat, age_s=None):
        coords = {"repeat": repeat} | ({} if age_s is None else {"stage": "age", "age_s": age_s})
        return SimpleNamespace(repeat=repeat, coords=coords)

    # two steps of an aging (at 0 s and 10 s of it), two repeats: each step's window at its aging time
    hm = placed([(rec(1, 0), step), (rec(1, 10), step), (rec(2, 0), step), (rec(2, 10), step)])
    assert hm is not None and len(hm.counts) == 12 and hm.window_ms == 12000.0
    assert hm.counts[0] == (2, 4) and hm.counts[1] == (6, 0) and hm.counts[10] == (2, 4) and hm.counts[11] == (6, 0)
    assert all(sum(c) == 0 for c in hm.counts[2:10]) and hm.total() == 4 * step.total()
    # plain repeats: added, aligned at their windows' start
    two = placed([(rec(1), step), (rec(2), step)])
    assert two is not None and two.counts == ((2, 4), (6, 0)) and two.jobs == 2

    # a long aging: its steps' windows added in groups, at most 600 steps in all (84 steps of 1 h, 300 steps each)
    hour = Heatmap(12000, 3600000.0, 40, tuple((1,) for _ in range(300)), 1)
    long = placed([(rec(1, 3600 * i), hour) for i in range(84)])
    assert long is not None and len(long.counts) <= 600 and long.total() == 84 * 300
    assert long.step_ms == 12000 * 43 and long.window_ms <= 84 * 3600000.0 + long.step_ms


def test_an_agings_heatmaps_go_beside_its_long_run_charts():
    from protolab.report import tables

    rd = RunDir.open(DATA / "golden" / "emc-fill-aging-quick" / "run", write=False)
    hm = _real()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals,
                        heatmaps=lambda ids: dict.fromkeys(ids, hm))
    series = [c for c in data.charts if c.section == "series"]
    maps = [c for c in series if c.kind == "heatmap"]
    assert maps and all(c.xlabel == "second of the aging" for c in maps)
    first = next(i for i, c in enumerate(series) if c.kind == "heatmap")
    assert any(c.id.startswith("longrun-") for c in series[:first])  # after the long runs' own charts
    aged = [r for r in data.records if r.coords.get("stage") == "age"]
    for c in maps:
        mine = [r for r in aged if c.title.split(": ")[1].startswith(r.configuration + ",")]
        assert sum(row["ios"] for row in c.table) == len(mine) * hm.total()  # every step and repeat, once
