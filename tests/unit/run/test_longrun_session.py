"""A window interrupted half-way (fake fio replaying fio 3.33's real statuses): its intervals stay in series.csv
under their own seq and session, resume measures the cell again under a new seq, and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from fakes import LOCAL, PLAN, FakeFio, FakeTestbed
from protolab.engine.status import documents
from protolab.plan.load import load_plan_text
from protolab.report import tables
from protolab.results.rundir import RunDir
from protolab.run import Study
from protolab.run.resume import resumable

ONE = PLAN.replace('''[[configurations]]
name = "b"
target = "t"
ioengine = "psync"
''', "").replace('''[[load_points]]
streams = 2
oio = 1
''', "").replace('duration = "1s"\nrepeats = 3', 'duration = "4s"\nrepeats = 2\nslo = {{ p95 = "1ms" }}')


class StatusFio(FakeFio):
    """Writes fio's real statuses one by one; at run ``interrupt_at`` it is 'signalled' after ``after`` of them."""

    def __init__(self, events, interrupt_at=None, after=3):
        super().__init__(events)
        self.stop_at, self.after = interrupt_at, after

    def run_job(self, job, output, *, on_status=None, **kw):
        self.runs += 1
        self.events.append(f"measure {Path(job).name.split('.')[0]}")
        with open(output, "w") as f:
            for k, doc in enumerate(documents(LOCAL)):
                if self.runs == self.stop_at and k == self.after:
                    self.events.append("fio stopped")
                    raise KeyboardInterrupt("SIGTERM")
                f.write(json.dumps(doc, indent=2) + "\n")
                f.flush()
                if on_status(doc):
                    break
        return ""


def test_an_interrupted_window_keeps_its_intervals_and_resume_measures_it_again(tmp_path):
    text = ONE.format(dir=tmp_path)
    plan = load_plan_text(text)
    events: list[str] = []
    fio = StatusFio(events, interrupt_at=2, after=3)
    study = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio, testbed=FakeTestbed(plan, fio, events))
    with pytest.raises(KeyboardInterrupt):
        study.run()
    rd = RunDir.open(study.rundir.path)
    assert [r.seq for r in rd.records()] == [1]
    kept = rd.intervals()
    # the first window: 4 intervals of 1 s; the interrupted one: the 3 statuses fio wrote before the signal
    # (each interval ends at the jobs' I/O time: the captured statuses are 0.872, 1.872 … s into the run)
    assert [row.t_s for row in kept[1]] == [0.872, 1.872, 2.877, 3.876]
    assert [row.t_s for row in kept[2]] == [0.872, 1.872, 2.877]
    assert {row.session for rows in kept.values() for row in rows} == {1}
    assert all(row.lat_p95_us > 0 and row.mbps > 0 for row in kept[2])
    assert rd.manifest().measuring.model_dump() == {"seq": 2, "cell_id": "tr3808-4k__a__h1s1q1__r2", "session": 1}

    plan2, text2, source = resumable(rd)
    fio2 = StatusFio([])
    Study(plan2, text2, source, results_root=rd.path.parent, fio=fio2,
          testbed=FakeTestbed(plan2, fio2, [])).resume(rd)
    rd = RunDir.open(rd.path)
    assert [(r.cell_id[-2:], r.seq, r.session) for r in rd.all_records()] == [("r1", 1, 1), ("r2", 3, 2)]
    kept = rd.intervals()
    assert sorted(kept) == [1, 2, 3] and len(kept[2]) == 3 and {row.session for row in kept[3]} == {2}
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    notes = [f.text for f in data.findings if f.kind == "note" and "interrupted" in f.text]
    assert notes == ["the window of tr3808-4k__a__h1s1q1__r2 in session 1 was interrupted; its 3 intervals are "
                     "kept in series.csv (seq 2); it was measured again whole in a later session"]


def test_long_run_sentences_and_charts_from_the_intervals(tmp_path, monkeypatch):
    import protolab.report.longrun_charts as lr

    monkeypatch.setattr(lr, "MIN_INTERVALS", 4)  # the captured run is 4 s long: read it as a long run
    monkeypatch.setattr(lr, "LONG_WINDOW_S", 0.0)
    text = ONE.format(dir=tmp_path)
    plan = load_plan_text(text)
    fio = StatusFio([])
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, [])).run()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    said = [f.text for f in data.findings if f.kind == "long run"]
    rows = rd.intervals()[1]
    over = [sum(1 for r in rd.intervals()[seq] if r.lat_p95_us > 1000) for seq in (1, 2)]
    # one sentence for the cell: its two repeats pooled
    assert len(said) == 1 and said[0].startswith("tr3808-4k, long run of a at 1×1×1=1 (2 repeats of 4 intervals "
                                                 "over 3.9 s): ")
    spread = f"; per repeat {25 * min(over):.1f}–{25 * max(over):.1f} %" if over[0] != over[1] else ""
    assert said[0].endswith(f"p95 over 1 ms in {sum(over)} of 8 intervals of the 2 repeats "
                            f"({100 * sum(over) / 8:.1f} %{spread})")
    assert "too few intervals to estimate a change over time" in said[0]  # 4 intervals: fewer than 4 blocks of 2
    charts = [c for c in data.charts if c.kind == "timeseries"]
    assert [c.id for c in charts] == ["longrun-iops-tr3808-4k-1-1-1-1", "longrun-lat_p95_us-tr3808-4k-1-1-1-1"]
    assert charts[1].title == "tr3808-4k — p95 latency (µs) over time at 1×1×1=1"
    assert charts[1].hline == 1000.0 and not charts[1].log_x and charts[0].series[0].x == [0.872, 1.872, 2.877, 3.876]
    assert charts[0].series[0].values == [r.iops for r in rows]
    from protolab.report.figures import draw

    drawn = draw(charts[1], tmp_path / "fig", ["a"])
    assert 'data-series="a r1"' in drawn.svg and (tmp_path / "fig" / f"{charts[1].id}.png").stat().st_size > 1000


def test_an_interrupted_aging_sequence_is_measured_again_whole_from_age_zero(tmp_path):
    text = ONE.format(dir=tmp_path).replace('duration = "4s"\nrepeats = 2', 'repeats = 1').replace(
        "warmup = 0", 'warmup = "1s"') + \
        '[stage.age]\nduration = "8s"\nevery = "2s"\n'
    plan = load_plan_text(text)
    assert plan.age_steps == 4
    events: list[str] = []
    fio = StatusFio(events, interrupt_at=3, after=1)  # signalled in the third step, after its first interval
    study = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio, testbed=FakeTestbed(plan, fio, events))
    with pytest.raises(KeyboardInterrupt):
        study.run()
    rd = RunDir.open(study.rundir.path)
    assert [(r.coords["age_s"], r.seq) for r in rd.records()] == [(0, 1), (2, 2)]
    # the steps' intervals are on the aging's time axis; the third step kept its first interval
    got = [(seq, row.t_s) for seq, rows in sorted(rd.intervals().items()) for row in rows]
    assert [seq for seq, _ in got] == [1, 1, 2, 2, 3] and got[0][1] == 1.0 and got[-1][1] == 4.749
    assert all(b[1] > a[1] for a, b in zip(got, got[1:]))  # one time axis, in the jobs' I/O time
    plan2, text2, source = resumable(rd)
    events2: list[str] = []
    fio2 = StatusFio(events2)
    Study(plan2, text2, source, results_root=rd.path.parent, fio=fio2,
          testbed=FakeTestbed(plan2, fio2, events2)).resume(rd)
    rd = RunDir.open(rd.path)
    # every step again, from age 0, in order; the first session's two steps stay as superseded records
    assert [e.removeprefix("measure ")[-2:] for e in events2 if e.startswith("measure ")] == ["a0", "a1", "a2", "a3"]
    assert [(r.coords["age_s"], r.seq, r.session) for r in rd.records()] == \
        [(0, 4, 2), (2, 5, 2), (4, 6, 2), (6, 7, 2)]
    assert len(rd.all_records()) == 6
    recs = rd.records()
    assert recs[0].warmup.seconds > 0 and all(r.warmup.seconds == 0 for r in recs[1:])  # only the first warms up


def test_a_direct_run_keeps_the_histograms_of_its_first_and_latest_statuses_only():
    from protolab.engine.window import _Live

    got = []
    # the warm-up ends at the second status: the window's first status is #1
    live = _Live(10_000.0, lambda series, s: len(series) >= 2, lambda: None, lambda: None, 1, got.append)
    for doc in documents(LOCAL):
        live(doc)
    with_bins = [i for i, s in enumerate(live.snaps) if "clat_ns" in s.jobs[0]["read"]]
    assert live.start == 1 and with_bins == [1, 4] and len(live.snaps) == 5
    assert [iv.t_s for iv in got] == [1.005, 2.004, 2.128]  # I/O time from the window's first status (fio's last at 4 s)
    # what the window needs is still exact: its I/Os from its first status to its latest
    assert sum(iv.ios for iv in got) == live.snaps[4].ios - live.snaps[1].ios


def test_series_charts_count_in_intervals_and_leave_aging_to_the_long_run_chart(tmp_path):
    text = ONE.format(dir=tmp_path).replace('duration = "4s"', 'duration = "4s"\ninterval = "2s"')
    plan = load_plan_text(text)
    fio = StatusFio([])
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, [])).run()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    [chart] = [c for c in data.charts if c.kind == "series"]
    # the fake fio's statuses are a second apart whatever it is asked: 4 of them make the 4 s window
    assert chart.title == "tr3808-4k — IOPS per 2 s interval at 1×1×1=1" and chart.x == ["2", "4", "6", "8"]
    assert chart.table[0]["seconds"] == 8

    aged = ONE.format(dir=tmp_path).replace('duration = "4s"\nrepeats = 2', 'repeats = 1') + \
        '[stage.age]\nduration = "4s"\nevery = "2s"\n'
    plan = load_plan_text(aged)
    rd = Study(plan, aged, "fake.toml", results_root=tmp_path / "r2", fio=fio,
               testbed=FakeTestbed(plan, fio, [])).run()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    assert [c.kind for c in data.charts if c.section == "series"] == ["timeseries", "timeseries"]
    [run] = [f.text for f in data.findings if f.kind == "long run"]
    assert run.startswith("tr3808-4k, aging of a at 1×1×1=1 (repeat 1, 4 intervals over 3.7 s): ")


def test_the_latency_chart_follows_the_objectives_metric(tmp_path, monkeypatch):
    import protolab.report.longrun_charts as lr

    monkeypatch.setattr(lr, "MIN_INTERVALS", 4)
    monkeypatch.setattr(lr, "LONG_WINDOW_S", 0.0)
    text = ONE.format(dir=tmp_path).replace('slo = { p95 = "1ms" }', 'slo = { mean = "500us" }')
    plan = load_plan_text(text)
    fio = StatusFio([])
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, [])).run()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    lat = [c for c in data.charts if c.kind == "timeseries"][1]
    assert lat.id == "longrun-lat_mean_us-tr3808-4k-1-1-1-1" and lat.hline == 500.0
    assert lat.title == "tr3808-4k — mean latency (µs) over time at 1×1×1=1"
    over = [sum(1 for r in rd.intervals()[seq] if r.lat_mean_us > 500) for seq in (1, 2)]
    said = [f.text for f in data.findings if f.kind == "long run"]
    spread = f"; per repeat {25 * min(over):.1f}–{25 * max(over):.1f} %" if over[0] != over[1] else ""
    assert said == [said[0]] and said[0].endswith(f"mean over 500 µs in {sum(over)} of 8 intervals of the 2 repeats "
                                                  f"({100 * sum(over) / 8:.1f} %{spread})")


def test_with_an_objective_a_short_window_is_judged_per_interval_and_without_one_it_is_not(tmp_path, monkeypatch):
    import protolab.report.longrun_charts as lr

    monkeypatch.setattr(lr, "MIN_SLO_INTERVALS", 4)  # the captured run has 4 intervals; MIN_INTERVALS stays 20
    for text, runs in ((ONE.format(dir=tmp_path / "a"), 1),  # one cell: its 2 repeats in one sentence
                       (ONE.format(dir=tmp_path / "b").replace('slo = { p95 = "1ms" }\n', ""), 0)):
        plan = load_plan_text(text)
        fio = StatusFio([])
        rd = Study(plan, text, "fake.toml", results_root=tmp_path / f"r{runs}", fio=fio,
                   testbed=FakeTestbed(plan, fio, [])).run()
        data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
        said = [f.text for f in data.findings if f.kind == "long run"]
        assert len(said) == runs and all("p95 over 1 ms in" in s for s in said)


def test_a_window_of_a_few_minutes_is_not_a_long_run_without_an_objective(tmp_path, monkeypatch):
    """5-minute windows of 30 intervals (no slo, no aging) are read by the steady-state test only: no long-run
    sentence or chart; the same windows count as long runs once the long-run threshold is at their length."""
    import sys

    import protolab.report.longrun_charts as lr

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from report_render import make_run

    rd = make_run(tmp_path, windows=42)  # 7 configurations x 2 workloads x 1 load point x 3 repeats
    assert {r.result.runtime_s for r in rd.records()} == {300.0}
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    assert [f for f in data.findings if f.kind == "long run"] == []
    assert [c for c in data.charts if c.kind == "timeseries"] == []
    monkeypatch.setattr(lr, "LONG_WINDOW_S", 300.0)
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    assert len([f for f in data.findings if f.kind == "long run"]) == 14  # one per cell, its 3 repeats pooled
    assert len([c for c in data.charts if c.kind == "timeseries"]) == 2  # IOPS per workload's one load point
