"""`protolab history`: the runs of one study with their environment, per configuration the headline figures and
each change from the run before — called only as compare calls one, else its MDD — and the page that draws them."""

from __future__ import annotations

import csv
import json
import re

from catalogue_cli import protolab
from fakeruns import make_run
from protolab.analysis.compare import compare_runs
from protolab.catalogue.index import DB_NAME


def _three_runs(root):
    """Alike, alike, then iSCSI 12.5 % slower on a new kernel."""
    return [make_run(root, seed=1), make_run(root, seed=2),
            make_run(root, seed=3, kernel="6.12", iops={"direct": 1000.0, "iscsi": 700.0})]


def test_history_lists_the_runs_and_calls_only_what_the_test_supports(tmp_path, capsys):
    root = tmp_path / "results"
    runs = _three_runs(root)
    make_run(root, name="other", seed=4)
    code, out, err = protolab(capsys, "history", "nightly", "--results", root, "--no-page", "--json")
    assert code == 0, err
    assert err.strip() == f"{root}: catalogue missing: built from 4 run directories"
    h = json.loads(out)
    assert h["plan"] == "nightly" and h["page"] is None
    assert [r["run"] for r in h["runs"]] == [r.run_id for r in runs]  # oldest first, the other plan left out
    assert [r["environment_changed"] for r in h["runs"]] == [[], [], ["kernel"]]
    assert h["runs"][2]["environment"]["kernel"] == "6.12" and h["runs"][0]["environment"]["fio"] == "fio-3.33"
    assert list(h["metrics"]) == ["iops", "mbps", "lat_mean_us", "lat_p99_us"]
    lines = {(ln["configuration"], ln["load"]): ln["runs"] for ln in h["lines"]}
    assert list(lines) == [("direct", "1×1×4=4"), ("iscsi", "1×1×4=4"), ("direct", "1×2×4=8"), ("iscsi", "1×2×4=8")]
    iscsi = lines[("iscsi", "1×1×4=4")]
    assert iscsi[0]["changes"] == {} and iscsi[0]["repeats"] == 4
    assert 795 < iscsi[0]["medians"]["iops"] < 805 and 695 < iscsi[2]["medians"]["iops"] < 705
    drop = iscsi[2]["changes"]["iops"]
    assert drop["called"] and drop["verdict"] == "lower" and -13.5 < drop["change_pct"] < -11.5
    assert drop["text"] == f"{drop['change_pct']:+.1f} % (called)" and drop["mdd_pct"] is None
    assert iscsi[2]["changes"]["lat_mean_us"]["verdict"] == "higher"
    # from the catalogue's values, the very call `protolab compare RUN2 RUN3` makes from the records
    [row] = [r for r in compare_runs(runs[1].records(), runs[2].records(), ["iops"])
             if (r.configuration, r.load_label) == ("iscsi", "1×1×4=4")]
    assert (drop["change_pct"], drop["verdict"]) == (row.relative - 100, row.verdict)
    same = lines[("direct", "1×1×4=4")][2]["changes"]["iops"]
    assert not same["called"] and same["verdict"] == "no clear difference" and 2.0 <= same["mdd_pct"] < 5
    assert same["text"] == f"no called change (MDD {same['mdd_pct']:.1f} %)"
    assert (root / DB_NAME).is_file()


def test_history_on_the_terminal_names_each_change_and_counts_the_called_ones(tmp_path, capsys):
    root = tmp_path / "results"
    runs = _three_runs(root)
    linked = make_run(root, seed=7)
    (linked.path / "raw").mkdir()
    (linked.path / "raw" / "x.json").symlink_to("/etc/passwd")
    code, out, err = protolab(capsys, "history", runs[0].path, "--results", root, "--no-page")  # a run names its plan
    assert code == 0, err
    assert err.splitlines()[1] == (f"{root}: {linked.run_id}: not read: {linked.path}: raw/x.json is a symlink; "
                                   "protolab reads and writes no run directory that holds one (remove it, or copy "
                                   "the run without links)")
    assert "nightly: 3 run(s), oldest first" in out
    assert re.search(r"no called change \(MDD \d+\.\d %\)", out)
    assert re.search(r"-1[23]\.\d % \(called\)", out)
    # iSCSI's IOPS, MB/s, mean and p99 latency at both load points
    assert out.rstrip().endswith("8 called change(s) between consecutive runs")


def test_history_writes_a_page_with_each_metric_over_the_runs(tmp_path, capsys):
    root = tmp_path / "results"
    runs = _three_runs(root)
    code, out, err = protolab(capsys, "history", "nightly", "--results", root, "--out", tmp_path / "page")
    assert code == 0, err
    page = (tmp_path / "page" / "history.html").read_text()
    charts = re.findall(r'data-chart="([^"]+)"', page)
    assert charts == ["history-iops-tr3808-4k", "history-mbps-tr3808-4k", "history-lat_mean_us-tr3808-4k",
                      "history-lat_p99_us-tr3808-4k"]
    block = page.split('data-chart="history-iops-tr3808-4k"')[1].split("</figure>")[0]
    assert set(re.findall(r'data-series="([^"]+)"', block)) == {"direct · 1×1×4=4", "iscsi · 1×1×4=4",
                                                                 "direct · 1×2×4=8", "iscsi · 1×2×4=8"}
    assert "default-src 'none'" in page and all(r.run_id in page for r in runs)
    assert (tmp_path / "page" / "figures" / "history-iops-tr3808-4k.png").stat().st_size > 1000
    with open(tmp_path / "page" / "tables" / "history-iops-tr3808-4k.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * 3  # four lines × three runs
    last = [r for r in rows if r["configuration"] == "iscsi · 1×1×4=4"][-1]
    assert last["run"] == runs[2].run_id and 695 < float(last["IOPS"]) < 705 and last["change"].endswith("(called)")
    assert f"page: {tmp_path / 'page' / 'history.html'}" in out


def test_history_without_a_plan_lists_the_studies(tmp_path, capsys):
    root = tmp_path / "results"
    runs = _three_runs(root)
    code, out, _ = protolab(capsys, "history", "--results", root, "--json")
    assert code == 0
    assert json.loads(out)["plans"] == [{"plan": "nightly", "runs": 3, "newest": runs[2].run_id}]


def test_history_of_an_unknown_plan_or_results_directory_is_one_line_and_creates_nothing(tmp_path, capsys):
    root = tmp_path / "results"
    make_run(root, seed=1)
    code, out, err = protolab(capsys, "history", "nope", "--results", root)
    assert code == 2 and out == ""
    assert err == (f"protolab: error: history: no runs of plan 'nope' in {root}; plans there: nightly (give "
                   "--results DIR where 'protolab run' wrote them)\n")
    assert not (root / DB_NAME).exists() and not (root / "history-nope").exists()
    code, _, err = protolab(capsys, "history", "nightly", "--results", tmp_path / "none")
    assert code == 2 and err.count("\n") == 1 and "no such results directory; give --results DIR" in err
    assert not (tmp_path / "none").exists()


def test_a_link_planted_where_the_page_goes_is_refused_in_one_line_and_not_followed(tmp_path, capsys):
    root = tmp_path / "results"
    make_run(root, seed=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "history-nightly").symlink_to(elsewhere)
    code, out, err = protolab(capsys, "history", "nightly", "--results", root)
    assert code == 2 and out == ""
    assert err.splitlines()[-1].startswith(f"protolab: error: {root / 'history-nightly'} is a symlink")
    assert list(elsewhere.iterdir()) == []
