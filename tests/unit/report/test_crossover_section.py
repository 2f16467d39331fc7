"""The crossover section's words from a real swept run (tests/data/golden/sweep-lab), and the added-time section
of a run without a sweep: its figures from the run, and over the RAM pool what that pool means for a reader."""

from __future__ import annotations

import re
import shutil

from conftest import DATA
from protolab.analysis.crossover import Obs, added_times, cost_at, crossover, matters_below_us, sentence
from protolab.report import tables
from protolab.report.sections import SECTIONS
from protolab.results.rundir import RunDir


def _data(tmp_path, name: str):
    run, src = tmp_path / name, DATA / "golden" / name / "run"
    shutil.copytree(src if src.is_dir() else DATA / name, run)
    rd = RunDir.open(run, write=False)
    return tables.build(rd.manifest(), rd.records()), rd.records()


def _section(name: str):
    return next(s for s in SECTIONS if s.name == name)


def test_a_swept_runs_report_opens_with_its_crossover_in_the_analysis_words(tmp_path):
    data, records = _data(tmp_path, "sweep-lab")
    assert SECTIONS[0].name == "crossover" and _section("added-time").build(data) is None
    m = _section("crossover").build(data)
    md = "\n".join(_section("crossover").markdown(m))
    obs = [Obs.of_record(r) for r in records]
    added = added_times(obs, "direct")
    pts = crossover(obs, "direct", 0.09, parallelism=16, added=added)
    assert f"- 4k-randread · 1×1×1=1: {sentence(pts, 'direct', 0.09)}" in md
    assert "0 µs is the device model's daemon answering each request at once: the fastest array the model gives" in md
    a = added[("4k-randread", "iscsi")]
    assert f"iscsi adds {a.o_us:.0f} µs (95 % CI {a.lo_us:,.0f} to {a.hi_us:,.0f} µs) per I/O over direct" in md
    for p in pts:  # the table: measured against predicted at every point
        assert f"| {p.ratio:.2f} ({p.ci_low:.2f}–{p.ci_high:.2f}) | {p.predicted:.2f} | {p.outcome}" in md
    assert "protolab's default ±9 %" in md


def test_a_ram_pool_run_says_what_its_pool_means_with_the_models_figure_and_names_array_speed(tmp_path):
    data, records = _data(tmp_path, "v1-run")
    assert _section("crossover").build(data) is None
    m = _section("added-time").build(data)
    md = "\n".join(_section("added-time").markdown(m))
    added = added_times([Obs.of_record(r) for r in records if not r.failed], data.baseline)
    assert added, "v1-run compares configurations against its baseline"
    for a in added.values():
        if a.o_us > 0:
            below = float(f"{matters_below_us(a.o_us, 0.09):.2g}")
            assert f"{a.configuration} adds {a.o_us:.0f} µs" in md
            cost = 100 * cost_at(a.o_us, 5500 + a.d_us)  # the model at hdd-array's 5.5 ms, d this run's own
            assert f"{a.configuration}'s added {a.o_us:.0f} µs would cost ~{cost:.0f} %" in md
            assert re.search(rf"below {below / 1000:g} ms|below {below:g} µs", md), (below, md)
    assert "fastest array this lab has" in md and "at hdd-array's 5.5 ms" in md
    assert "`protolab run --builtin array-speed`" in md and "predicted, not measured here" in md
