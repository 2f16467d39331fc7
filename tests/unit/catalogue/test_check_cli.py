"""`protolab check RUN --against BASELINE|latest`: exit 0 when every rule holds, 1 when a called change breaks one
(each named by rule, metric, configuration, workload and load point), 2 on bad input — unlike runs and rules files
included, in one line."""

from __future__ import annotations

import json

import pytest

from catalogue_cli import protolab
from fakeruns import make_run
from protolab.analysis.compare import compare_runs
from protolab.catalogue.index import DB_NAME

SLOWER = {"direct": 1000.0, "iscsi": 700.0}  # iSCSI 12.5 % below 800


def test_alike_runs_pass_every_built_in_rule(tmp_path, capsys):
    base, run = make_run(tmp_path, seed=1), make_run(tmp_path, seed=2)
    code, out, err = protolab(capsys, "check", run.path, "--against", base.path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines == ["not measured in both runs: cpu_us_per_io_loadgen <= +10 %",
                     "not measured in both runs: cpu_us_per_io_server <= +10 %",
                     f"check {run.run_id} against {base.run_id}: 0 of 16 rule checks violated (built-in rules); "
                     "16 hold, 0 not tested"]


def test_a_called_change_outside_the_tolerance_fails_with_exit_1_naming_metric_and_configuration(tmp_path, capsys):
    base, run = make_run(tmp_path, seed=1), make_run(tmp_path, seed=2, iops=SLOWER)
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path)
    assert code == 1
    violated = [ln for ln in out.splitlines() if ln.startswith("violated: ")]
    assert len(violated) == 8  # iSCSI's IOPS, MB/s, mean and p99 latency at both load points
    iops = violated[0]
    assert iops.startswith("violated: iops >= -5 % — configuration iscsi, workload tr3808-4k, load 1×1×4=4: IOPS -1")
    assert iops.endswith("called lower)") and "Holm-corrected p" in iops
    assert sum("lat_p99_us <= +10 % — configuration iscsi" in ln for ln in violated) == 2
    assert not any("configuration direct" in ln for ln in violated), violated
    assert out.splitlines()[-1].startswith(f"check {run.run_id} against {base.run_id}: 8 of 16 rule checks violated")


def test_cpu_per_io_is_checked_by_role_and_other_work_on_the_machine_breaks_no_built_in_rule(tmp_path, capsys):
    """The machine's busy CPU per I/O doubled by other programs: every built-in rule holds (the roles' CPU did not
    change); the storage server's CPU per I/O up 30 %: its rule is broken, at each configuration and load point."""
    cpu = {"servers": 20.0, "loadgen": 30.0, "machine": 60.0}
    base = make_run(tmp_path, seed=1, cpu_us=cpu)
    busy = make_run(tmp_path, seed=2, cpu_us={**cpu, "machine": 120.0})
    code, out, _ = protolab(capsys, "check", busy.path, "--against", base.path)
    assert code == 0 and out.splitlines() == [f"check {busy.run_id} against {base.run_id}: 0 of 24 rule checks "
                                              "violated (built-in rules); 24 hold, 0 not tested"]
    dearer = make_run(tmp_path, seed=3, cpu_us={**cpu, "servers": 26.0})
    code, out, _ = protolab(capsys, "check", dearer.path, "--against", base.path)
    violated = [ln for ln in out.splitlines() if ln.startswith("violated: ")]
    assert code == 1 and len(violated) == 4
    assert all(ln.startswith("violated: cpu_us_per_io_server <= +10 % — configuration ") for ln in violated)
    assert all(28 < float(ln.split(" server CPU per I/O ")[1].split(" %")[0]) < 32 for ln in violated), violated


def test_a_changed_link_is_checked_and_named_as_what_changed(tmp_path, capsys):
    """A link (or kernel) change makes no unlike runs: it is what a check is for, and it says what changed."""
    base = make_run(tmp_path, seed=1)
    run = make_run(tmp_path, seed=2, iops=SLOWER, link="100mbit", kernel="6.12")
    code, out, err = protolab(capsys, "check", run.path, "--against", base.path)
    assert (code, err) == (1, "")
    assert out.splitlines()[:2] == ["environment changed from the baseline: kernel (6.12 against 6.1)",
                                    "environment changed from the baseline: link (100mbit MTU 9000 against 1GbE MTU "
                                    "9000)"]
    assert out.splitlines()[2].startswith("violated: iops >= -5 % — configuration iscsi, workload tr3808-4k, ")
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path, "--json")
    assert code == 1 and json.loads(out)["environment_changed"] == ["kernel (6.12 against 6.1)",
                                                                    "link (100mbit MTU 9000 against 1GbE MTU 9000)"]


def test_json_gives_every_outcome_with_its_figures(tmp_path, capsys):
    base, run = make_run(tmp_path, seed=1), make_run(tmp_path, seed=2, iops=SLOWER)
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path, "--json")
    assert code == 1
    doc = json.loads(out)
    assert (doc["ok"], doc["exit_code"], doc["violated"], len(doc["outcomes"])) == (False, 1, 8, 16)
    o = next(o for o in doc["outcomes"] if o["configuration"] == "iscsi" and o["metric"] == "iops")
    assert o["status"] == "violated" and o["verdict"] == "lower" and o["repeats"] == [4, 4]
    assert -13.5 < o["change_pct"] < -11.5 and o["ci_low_pct"] <= o["change_pct"] <= o["ci_high_pct"] < -5
    assert o["change_pct"] == pytest.approx(100 * (o["median_run"] / o["median_baseline"] - 1))
    # the very row `protolab compare BASE RUN` gives (same test, interval and correction family)
    [same] = [r for r in compare_runs(base.records(), run.records()) if r.metric == "iops"
              and (r.configuration, r.load_label) == ("iscsi", o["load"])]
    assert (o["change_pct"], o["ci_low_pct"], o["p_adjusted"]) == (same.relative - 100, same.ci_low - 100,
                                                                   same.p_adjusted)
    held = next(o for o in doc["outcomes"] if o["configuration"] == "direct" and o["metric"] == "iops")
    assert held["status"] == "holds" and held["verdict"] == "no clear difference" and held["mdd_pct"] >= 2.0
    assert doc["not_measured"] == ["cpu_us_per_io_loadgen <= +10 %", "cpu_us_per_io_server <= +10 %"]
    assert doc["environment_changed"] == [] and doc["forced"] == []


def test_a_change_outside_the_tolerance_that_is_not_called_holds(tmp_path, capsys):
    # 8 % slower, but repeats spread ±20 %: the test cannot call it, so the rule holds and says its MDD
    base = make_run(tmp_path, seed=1, spread=0.2, repeats=3)
    run = make_run(tmp_path, seed=2, spread=0.2, repeats=3, iops={"direct": 920.0, "iscsi": 736.0})
    rules = tmp_path / "rules.toml"
    rules.write_text('rules = ["iops >= -5 %"]\n')
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path, "--rules", rules, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["rules"] == str(rules) and {o["status"] for o in doc["outcomes"]} == {"holds"}
    assert any(o["change_pct"] < -5 for o in doc["outcomes"])
    assert all(o["verdict"] == "no clear difference" and o["mdd_pct"] > 10 for o in doc["outcomes"])


def test_too_few_repeats_are_not_tested_and_say_the_check_cannot_fail(tmp_path, capsys):
    base, run = make_run(tmp_path, seed=1, repeats=2), make_run(tmp_path, seed=2, repeats=2, iops=SLOWER)
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path)
    assert code == 0
    assert out.splitlines()[-1].endswith("0 of 16 rule checks violated (built-in rules); 0 hold, 16 not tested — "
                                         "nothing could be tested (fewer than 3 repeats a side): the check cannot fail")


def test_latest_is_the_newest_other_complete_run_of_the_same_plan(tmp_path, capsys):
    root = tmp_path / "results"
    make_run(root, seed=1, iops=SLOWER)
    newest_base = make_run(root, seed=2)
    make_run(root, name="other", seed=3)
    run = make_run(root, seed=4)
    code, out, _ = protolab(capsys, "check", run.path, "--against", "latest")
    assert code == 0
    assert f"check {run.run_id} against {newest_base.run_id}: 0 of 16" in out
    assert (root / DB_NAME).is_file()  # the catalogue of RUN's results directory
    code, _, err = protolab(capsys, "check", make_run(tmp_path / "alone", seed=5).path, "--against", "latest")
    assert code == 2 and err.count("\n") == 1
    assert "--against latest: no other complete run of plan 'nightly' in" in err


@pytest.mark.parametrize("kw, words", [
    ({"fio": "fio-3.36"}, "fio version (fio-3.36 against fio-3.33)"),
    ({"device_model": "flash"}, "device model (flash: "),
    ({"name": "weekly"}, "plan name (weekly against nightly)"),
])
def test_a_run_against_an_unlike_baseline_is_refused_unless_forced(tmp_path, capsys, kw, words):
    base, run = make_run(tmp_path, seed=1), make_run(tmp_path, seed=2, **kw)
    code, out, err = protolab(capsys, "check", run.path, "--against", base.path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"protolab: error: check {run.path} --against {base.path}: unlike runs, {words}")
    assert err.rstrip().endswith("pass --force to check the cells they share anyway")
    code, out, _ = protolab(capsys, "check", run.path, "--against", base.path, "--force")
    assert code in (0, 1) and out.startswith("checked anyway (--force): ")


@pytest.mark.parametrize("text, message", [
    (None, "--rules {path}: no such file; give a TOML file"),
    ("rules = [", "{path}: not TOML ("),
    ('rules = ["iops > -5 %"]', "{path}: rules[0]: 'iops > -5 %' is not a rule; write METRIC >= -N % or METRIC <= "
     "+N %, e.g. 'iops >= -5 %'"),
    ('rules = ["iops >= -5 %", "iopz <= 3 %"]', "{path}: rules[1]: unknown metric 'iopz'; use one of iops, "),
    ('rules = []', "{path}: field 'rules': give a non-empty list of rules"),
    ('rule = ["iops >= -5 %"]', "{path}: unknown key 'rule'; a rules file has one key"),
])
def test_a_bad_rules_file_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    make_run(tmp_path / "r", seed=1)  # the baseline 'latest' would find
    run = make_run(tmp_path / "r", seed=2, iops=SLOWER)
    path = tmp_path / "rules.toml"
    if text is not None:
        path.write_text(text + "\n")
    code, out, err = protolab(capsys, "check", run.path, "--against", "latest", "--rules", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("protolab: error: " + message.format(path=path))
    assert not (tmp_path / "r" / DB_NAME).exists()  # refused before the catalogue is written


def test_a_baseline_that_is_not_a_run_or_the_run_itself_is_refused(tmp_path, capsys):
    run = make_run(tmp_path, seed=1)
    code, _, err = protolab(capsys, "check", run.path, "--against", tmp_path / "nothing")
    assert code == 2 and "not a protolab run directory (no manifest.json)" in err and err.count("\n") == 1
    code, _, err = protolab(capsys, "check", run.path, "--against", run.path)
    assert code == 2 and "the run and its baseline are the same run directory" in err
