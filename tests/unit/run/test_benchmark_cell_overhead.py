"""benchmarks/cell_overhead.py's arithmetic on stored records: each cell's time from the previous record to its own,
less its warm-up and window in its jobs' I/O time, split at its window's start."""

from __future__ import annotations

import csv
import sys

import pytest

from conftest import ROOT
from protolab.results.records import SERIES_COLUMNS, SeriesRow


def _rec(seq: int, configuration: str, started: str, ended: str, warmup_s: float, runtime_s: float) -> dict:
    return {"seq": seq, "coords": {"configuration": configuration}, "started": f"2026-12-07T10:{started}+00:00",
            "ended": f"2026-12-07T10:{ended}+00:00", "warmup": {"seconds": warmup_s},
            "result": {"runtime_s": runtime_s}}


def _series(path, rows: list[SeriesRow]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SERIES_COLUMNS)
        w.writerows(["" if (v := r.model_dump()[k]) is None else v for k in SERIES_COLUMNS] for r in rows)


def test_each_cell_is_charged_its_own_start_and_end_beyond_its_warmup_and_window(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import cell_overhead

    rows = []
    for seq, cell, window in ((1, "a", 3.0), (2, "b", 3.0), (3, "a", 2.5)):
        rows += [SeriesRow(seq=seq, cell_id=cell, phase="warmup", host="all", t_s=t, iops=1.0) for t in (1.0, 2.0)]
        rows += [SeriesRow(seq=seq, cell_id=cell, phase="measure", host="all", t_s=t, iops=1.0)
                 for t in (1.0, 2.0, window)]
        rows.append(SeriesRow(seq=seq, cell_id=cell, phase="measure", host="h0", t_s=4.0, iops=1.0))  # not the window
    _series(tmp_path / "series.csv", rows)
    windows = cell_overhead.window_seconds(tmp_path)
    assert windows == {1: 3.0, 2: 3.0, 3: 2.5}
    # fio's own runtime_s (its longest job between the boundary statuses: 4.2 s where a server's statuses fell out
    # of step) is not the window's length, and the previous cell's end is not this cell's: neither is used
    recs = [_rec(1, "nbd", "00:05.000", "00:10.000", 2.0, 4.2),
            _rec(2, "iscsi", "00:13.500", "00:17.250", 2.0, 4.2),  # 1.5 s before the window, 0.75 s after it
            _rec(3, "nbd", "00:24.000", "00:30.000", 1.5, 2.5)]  # 5.25 s before, 3.5 s after
    got = cell_overhead.cell_times(recs, windows)
    assert [c.configuration for c in got] == ["iscsi", "nbd"]
    assert [c.overhead for c in got] == pytest.approx([2.25, 8.75])
    assert [c.head for c in got] == pytest.approx([1.5, 5.25])
    assert [c.tail for c in got] == pytest.approx([0.75, 3.5])
