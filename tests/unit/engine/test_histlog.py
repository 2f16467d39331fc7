"""fio's histogram logs (engine.histlog) and their heatmap (analysis.heatmap, results.heatmapfile) on real fio 3.33 logs:
tests/data/fio-histlog/ (see its README): two jobs at 3,000 IOPS each for 1.5 s, logged every 100 ms, run directly
and as a client of a unix socket server."""

from __future__ import annotations

import json
import math

from fakes import DATA
from protolab.analysis.heatmap import added, bin_window, row_map
from protolab.engine.faultlog import job_logs, remove_logs
from protolab.engine.histlog import (
    BINS,
    COARSENESS,
    bin_edges_ns,
    hist_options,
    parse_hist_log,
    read_hist_logs,
    step_ms,
)
from protolab.results.heatmapfile import PER_DECADE, Heatmap, edge_us, read_heatmaps, row_of, write_heatmap

LOGS = DATA / "fio-histlog"


def test_the_bins_are_fios():
    edges = bin_edges_ns(0)
    assert len(edges) == BINS == 1856
    # stat.c's plat_idx_to_val gives each bin's middle: the edges must put it there
    for i in (0, 63, 127, 128, 200, 640, 1000, 1855):
        low, high = edges[i]
        if i < 128:
            assert (low, high) == (i, i + 1)
            continue
        eb = (i >> 6) - 1
        middle = (1 << (eb + 6)) + (i % 64 + 0.5) * (1 << eb)
        assert (low + high) / 2 == middle
    assert all(a[1] == b[0] for a, b in zip(edges, edges[1:]))  # contiguous
    coarse = bin_edges_ns(COARSENESS)
    assert len(coarse) == 464 and coarse[1] == (4, 8) and coarse[-1][1] == edges[-1][1]
    # no logged bin is wider than 1/16 of its latency above 1 µs: finer than a row of the heatmap (1/3)
    assert max((h - lo) / lo for lo, h in coarse if lo >= 1000) <= 1 / 16 + 1e-9


def test_options_and_steps():
    assert hist_options("/r/raw/c.fault", 100) == {"write_hist_log": "/r/raw/c.fault", "log_hist_msec": "100",
                                                   "log_hist_coarseness": "2"}
    assert step_ms(2) == 100 and step_ms(30) == 100 and step_ms(60) == 200 and step_ms(3600) == 12000


def test_direct_logs_add_up_to_fios_completions():
    jobs = read_hist_logs(LOGS / "hl")[:2]  # the direct run's (the client's follow, by server)
    assert [len(j) for j in jobs] == [14, 14]
    doc = json.loads((LOGS / "hl-fio.json").read_text())
    for entries, job in zip(jobs, doc["jobs"]):
        counted = sum(sum(c) for _, _, c in entries)
        total = job["read"]["total_ios"]  # 4,501 and 4,500
        # every completion but those after the last entry (under one step: 300 I/Os)
        assert 0 < total - counted <= 300 + 10
        assert {d for _, d, _ in entries} == {0}
        times = [t for t, _, _ in entries]
        assert times == sorted(times) and times[0] >= 100 and times[-1] <= 1500
    # every logged bin holds at most what fio's json+ histogram of the whole job (ns → count) has in its range,
    # and most of it: the logs are fio's own bins, four to a count
    edges = bin_edges_ns()
    for entries, job in zip(jobs, doc["jobs"]):
        whole = {int(k): v for k, v in job["read"]["clat_ns"]["bins"].items()}
        logged = [sum(cs[i] for _, _, cs in entries) for i in range(len(edges))]
        for (low, high), n in zip(edges, logged):
            assert n <= sum(v for k, v in whole.items() if low <= k < high)
        assert sum(logged) >= 0.9 * sum(whole.values())

def test_client_logs_are_found_and_hold_each_steps_counts():
    paths = job_logs(LOGS / "hl", "clat_hist")
    assert [p.name for p in paths] == ["hl_clat_hist.1.log", "hl_clat_hist.2.log", "hl_clat_hist.1.log.fio.sock",
                                       "hl_clat_hist.2.log.fio.sock"]
    client = [parse_hist_log(p.read_text()) for p in paths[2:]]
    per_step = [sum(c) for entries in client for _, _, c in entries]
    # 3,000 IOPS: 300 per 100 ms step, not counts that grow through the run (fio's server before patch 0005)
    assert len(per_step) == 28 and all(250 <= s <= 350 for s in per_step)


def test_a_torn_or_foreign_line_is_skipped():
    good = "100, 0, 4096, " + ", ".join(["1"] + ["0"] * 463)
    assert parse_hist_log("\n".join([good, good[:50], "x" + good, good.replace("1,", "-1,", 1)])) == [
        (100, 0, [1] + [0] * 463)]


def test_the_window_binned_on_a_log_grid():
    jobs = [parse_hist_log(p.read_text()) for p in job_logs(LOGS / "hl", "clat_hist")[:2]]
    # the window starts 300 ms into the jobs (their warm-up) and lasts 1 s
    hm = bin_window(jobs, bin_edges_ns(), t0_ms=300.0, window_ms=1000.0, step_ms=100)
    assert len(hm.counts) == 10 and hm.jobs == 2
    per_col = [sum(c) for c in hm.counts]
    # 2 × 300 per step; but job 1 logged nothing from 501 to 696 ms (184 completions in that entry, then 417 by
    # 701 as fio's rate caught up): the window's step 200–300 ms holds job 2's only, the next both jobs' and more
    assert per_col[2] < 400 and per_col[3] > 800, per_col
    assert all(540 <= s <= 660 for i, s in enumerate(per_col) if i not in (2, 3)), per_col
    # everything in the window's entries, and nothing of the warm-up's
    inside = sum(sum(c) for j in jobs for t, _, c in j if 400 <= t <= 1300)
    assert abs(hm.total() - inside) <= 600 + 10
    # the rows: fio's medians (3.2 and 3.6 µs: page cache reads) and 99th percentiles (26 and 83 µs) lie inside the
    # grid's rows kept, and the busiest row of every step is within two rows (a factor 1.8) of a median's
    edges = hm.edges_us()
    assert edges[0] < 3.184 < 3.632 < 25.984 < 83.456 < edges[-1]
    busiest = {hm.row0 + max(range(len(c)), key=c.__getitem__) for c in hm.counts}
    assert min(busiest) >= row_of(3.184) - 2 and max(busiest) <= row_of(3.632) + 2 < row_of(25.984), busiest
    assert row_of(1.0) == 0 and row_of(10.0) == PER_DECADE and math.isclose(edge_us(PER_DECADE), 10.0)
    rows = row_map(bin_edges_ns())
    assert rows == sorted(rows)  # the grid keeps fio's order


def test_repeats_added_and_kept(tmp_path):
    a = Heatmap(100, 1000.0, 30, ((1, 2), (0, 5)), 1)
    b = Heatmap(100, 1000.0, 29, ((4,), (0, 0, 0, 7)), 1)
    s = added([a, b])
    assert s is not None and s.row0 == 29 and s.counts == ((4, 1, 2, 0), (0, 0, 5, 7)) and s.total() == a.total() + b.total()
    assert added([a, Heatmap(200, 1000.0, 30, (), 1)]) is None
    write_heatmap(tmp_path, "w__c__h1s1q4__r1", s)
    (tmp_path / "heatmap" / "bad.json").write_text("{}")
    for name, bad in [("row", {"row0": 10**9}), ("steps", {"step_ms": 0}), ("neg", {"counts": [[-1]]})]:
        (tmp_path / "heatmap" / f"{name}.json").write_text(json.dumps({**s.to_dict(), **bad}))
    (tmp_path / "heatmap" / "link.json").symlink_to(tmp_path / "heatmap" / "w__c__h1s1q4__r1.json")
    got = read_heatmaps(tmp_path, ["w__c__h1s1q4__r1", "bad", "link", "absent", "row", "steps", "neg", "../x"])
    assert list(got) == ["w__c__h1s1q4__r1"] and got["w__c__h1s1q4__r1"].counts == ((4, 1, 2), (0, 0, 5, 7))
    assert json.loads((tmp_path / "heatmap" / "w__c__h1s1q4__r1.json").read_text())["counts"] == [[4, 1, 2], [0, 0, 5, 7]]


def test_logs_removed_by_prefix(tmp_path):
    for name in ("c.fault_clat_hist.1.log", "c.fault_iops.1.log.h1.sock", "other_clat_hist.1.log"):
        (tmp_path / name).write_text("")
    remove_logs(tmp_path / "c.fault")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_clat_hist.1.log"]
