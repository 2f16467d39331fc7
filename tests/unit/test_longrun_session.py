"""A window interrupted half-way (fake fio replaying fio 3.33's real statuses): its intervals stay in series.csv
under their own seq and session, resume measures the cell again under a new seq, and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protolab.engine.status import documents
from protolab.plan.load import load_plan_text
from protolab.report import tables
from protolab.results.rundir import RunDir
from protolab.run import Study
from protolab.run.resume import resumable

from test_session import PLAN, FakeFio, FakeTestbed
from test_status_window import LOCAL

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
    assert [row.t_s for row in kept[1]] == [1.0, 2.0, 3.0, 4.0] and [row.t_s for row in kept[2]] == [1.0, 2.0, 3.0]
    assert {row.session for rows in kept.values() for row in rows} == {1}
    assert all(row.lat_p95_us > 0 and row.mbps > 0 for row in kept[2])
    assert rd.manifest()["measuring"] == {"seq": 2, "cell_id": "tr3808-4k__a__h1s1q1__r2", "session": 1}

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
    import protolab.report.longrun as lr

    monkeypatch.setattr(lr, "MIN_INTERVALS", 4)  # the captured run is 4 s long: read it as a long run
    text = ONE.format(dir=tmp_path)
    plan = load_plan_text(text)
    fio = StatusFio([])
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, [])).run()
    data = tables.build(rd.manifest(), rd.records(), series=rd.series, intervals=rd.intervals)
    said = [f.text for f in data.findings if f.kind == "long run"]
    rows = rd.intervals()[1]
    over = sum(1 for r in rows if r.lat_p95_us > 1000)
    assert len(said) == 2 and said[0].startswith("tr3808-4k, long run of a at 1×1×1=1 (repeat 1, 4 intervals over 4 s): ")
    assert said[0].endswith(f"p95 over 1 ms in {over} of 4 intervals ({100 * over / 4:.1f} %)")
    assert "too few intervals to estimate a change over time" in said[0]  # 4 intervals: fewer than 4 blocks of 2
    charts = [c for c in data.charts if c.kind == "timeseries"]
    assert [c.id for c in charts] == ["longrun-iops-tr3808-4k-1-1-1-1", "longrun-lat_p95_us-tr3808-4k-1-1-1-1"]
    assert charts[1].hline == 1000.0 and not charts[1].log_x and charts[0].series[0].x == [1.0, 2.0, 3.0, 4.0]
    assert charts[0].series[0].values == [r.iops for r in rows]
    from protolab.report.figures import draw

    drawn = draw(charts[1], tmp_path / "fig", ["a"])
    assert 'data-series="a r1"' in drawn.svg and (tmp_path / "fig" / f"{charts[1].id}.png").stat().st_size > 1000
