"""compare.html's model and page: B relative to A per workload and metric with intervals only where both sides have
3 repeats, the comparison table, what differs, and the place of the summary matrix."""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest
from markupsafe import Markup

from protolab.analysis.compare import compare_runs, differences, unmatched
from protolab.report.comparepage import compare_page, render_compare
from protolab.report.drawer import draw_all
from protolab.results.manifest import Manifest
from protolab.results.records import CellRecord, CellResult, DirectionResult


def _rec(config: str, streams: int, repeat: int, iops: float) -> CellRecord:
    d = DirectionResult(ios=int(iops), iops=iops)
    res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(), lat_mean_us=1e6 / iops,
                     percentiles_us={"p99": 3e6 / iops}, jobs=1, runtime_s=2.0, errors=0)
    return CellRecord(run_id="r", seq=repeat, cell_id=f"w-{config}-{streams}-{repeat}", workload="w",
                      configuration=config, baseline=config == "base", load_index=streams - 1, hosts=1,
                      streams_per_host=streams, oio_per_stream=4, total_oio=4 * streams, repeat=repeat, started="",
                      ended="", result=res, raw_output="", job_file="")


def _run(scale: float, seed: int, repeats: dict[str, int]) -> list[CellRecord]:
    rng = np.random.default_rng(seed)
    return [_rec(c, s, k + 1, float(rng.normal(10000 * scale * s, 30))) for s in (1, 2) for c, n in repeats.items()
            for k in range(n)]


def _manifest(kernel: str) -> Manifest:
    return Manifest.model_validate({"plan": {"name": "p", "method": {"repeats": 4, "duration": 2.0}},
                                    "provenance": {"kernel": kernel, "fio_version": "fio-3.33"}})


@pytest.fixture(scope="module")
def compared():
    # 'base' has 4 repeats a side; 'x' only 2 in B: its cells are not tested and get no whisker
    a, b = _run(1.0, 1, {"base": 4, "x": 4}), _run(1.2, 2, {"base": 4, "x": 2})
    diffs = differences(_manifest("6.1"), a, _manifest("6.12"), b)
    rows = compare_runs(a, b, ["iops", "lat_mean_us"])
    return diffs, rows, compare_page("A", "B", diffs, rows, False, *unmatched(a, b))


def test_one_chart_per_metric_with_whiskers_only_where_both_sides_have_three_repeats(compared):
    _, rows, page = compared
    assert [c.id for c in page.charts] == ["compare-iops-w", "compare-lat_mean_us-w"]
    iops = page.charts[0]
    assert iops.x == ["1×1×4=4", "1×2×4=8"] and [s.name for s in iops.series] == ["base", "x"]
    base, x = iops.series
    want = {(r.configuration, r.load_label): r for r in rows if r.metric == "iops"}
    assert base.values == [want[("base", lb)].relative for lb in iops.x]
    assert base.values == [pytest.approx(120.0, abs=1.0)] * 2  # B is 1.2 × A
    assert base.low == [want[("base", lb)].ci_low for lb in iops.x] and None not in base.high
    assert x.low == [None, None] and x.high == [None, None] and x.values[0] == pytest.approx(120.0, abs=1.0)
    assert len(page.table) == len(rows) == 8 and page.headers[-1] == "verdict"


def test_the_page_draws_each_chart_and_shows_the_table_and_what_differs(compared):
    _, rows, page = compared
    html = render_compare(page, draw_all(page.charts, None, ["base", "x"]))
    assert re.findall(r'data-chart="([^"]+)"', html) == ["compare-iops-w", "compare-lat_mean_us-w"]
    assert "environment kernel (A: 6.1; B: 6.12)" in html and page.tally in html
    table = html.split('<section id="table">')[1]
    assert table.count("<tr>") == len(rows) + 1 and "not tested" in table
    assert html.count('id="summary-matrix"') == 1  # the matrix of B against A (test below)


def test_the_summary_matrix_has_its_place_between_the_tally_and_the_charts(compared):
    _, _, page = compared
    from dataclasses import replace

    html = render_compare(replace(page, summary_matrix=Markup("<table id='m'><tr><td>x 120 ↑</td></tr></table>")),
                          draw_all(page.charts, None, ["base", "x"]))
    assert html.index(page.tally) < html.index('<section id="summary-matrix">') < html.index('id="charts"')
    assert "<table id='m'><tr><td>x 120 ↑</td></tr></table>" in html


def test_the_page_has_the_summary_matrix_of_b_against_a(compared):
    from protolab.analysis.summary import compare_matrices

    _, rows, page = compared
    assert page.summary_matrix is not None and 'data-matrix="' in page.summary_matrix
    ms = compare_matrices(rows, "A")
    assert [m.workload for m in ms] == list(dict.fromkeys(r.workload for r in rows))
    for m in ms:
        for row in m.rows:
            for metric, c in row.cells.items():
                mine = [r for r in rows if (r.workload, r.configuration, r.metric) == (m.workload, row.configuration,
                                                                                      metric)]
                assert c.value == pytest.approx(statistics.median(r.relative for r in mine))
                called = {r.verdict for r in mine}
                assert (c.state in ("higher", "lower")) == (len(called) == 1 and called <= {"higher", "lower"})
    html = render_compare(page, {c.id: type("D", (), {"svg": "<svg></svg>"})() for c in page.charts})
    assert html.index('id="summary-matrix"') < html.index('id="charts"') and "run A = 100" in html
