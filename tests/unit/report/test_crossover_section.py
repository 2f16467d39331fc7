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


def _as_swept(tmp_path, sweep: dict, coords, lab_link: str = "1GbE", findings: list | None = None):
    """sweep-lab's measured windows stored as another sweep: the manifest's [sweep] and [lab.link] replaced, each
    record's swept coordinate(s) from ``coords`` (its service time in µs → the coordinates it gets)."""
    import json

    run = tmp_path / "run"
    shutil.copytree(DATA / "golden" / "sweep-lab" / "run", run)
    m = json.loads((run / "manifest.json").read_text())
    m["plan"]["sweep"] = {"service_time": None, "link_rate": None, "crossover_band": None, **sweep}
    m["plan"]["lab"]["link"]["rate"] = lab_link
    m["plan"]["seed_findings"] = findings or []
    m["dimensions"] = [k for k in ("service_time", "link_rate") if sweep.get(k)]
    (run / "manifest.json").write_text(json.dumps(m))
    lines = []
    for line in (run / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        r["coords"] = {**{k: v for k, v in r["coords"].items() if k != "service_time"},
                       **coords(r["coords"]["service_time"])}
        lines.append(json.dumps(r))
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    rd = RunDir.open(run, write=False)
    return tables.build(rd.manifest(), rd.records()), rd.records()


SEED = {"section": "§2.2", "said": "All within 9 % of FC.", "metric": "iops", "compare": "baseline",
        "claims": [{"within": 9}]}


def test_a_swept_link_rate_gets_the_crossover_in_its_own_units_without_the_service_time_model(tmp_path):
    data, records = _as_swept(tmp_path, {"link_rate": ["100mbit", "1GbE"]},
                              lambda st: {"link_rate": 100 if st == 0 else 1000})
    m = _section("crossover").build(data)
    assert m is not None and m.swept == "link_rate" and not m.added and not m.zero
    md = "\n".join(_section("crossover").markdown(m))
    obs = [Obs.of_record(r, "link_rate") for r in records]
    pts = crossover(obs, "direct", 0.09)
    assert {p.axis for p in pts} == {100, 1000}
    assert f"- 4k-randread · 1×1×1=1: {sentence(pts, 'direct', 0.09, 'link_rate')}" in md
    assert "100 Mbit/s" in md and "1 Gbit/s" in md and "µs" not in sentence(pts, "direct", 0.09, "link_rate")
    assert "| link rate |" in md and all(r[5] == "–" for r in m.rows)  # measured, no prediction
    assert "not made for a swept link rate" in md
    html = str(_section("crossover").html(m, None))
    assert "not made for a swept link rate" in html and "<th>link rate</th>" in html


def test_a_run_sweeping_both_coordinates_says_it_states_no_crossover(tmp_path):
    data, _ = _as_swept(tmp_path, {"service_time": ["0us", "500us"], "link_rate": ["1GbE"]},
                        lambda st: {"service_time": st, "link_rate": 1000})
    m = _section("crossover").build(data)
    md = "\n".join(_section("crossover").markdown(m))
    assert not m.rows and not m.sentences
    assert "sweeps both the service time and the link rate: the crossover is stated for one swept coordinate" in md


def test_with_a_seed_claims_band_the_crossover_says_where_the_claim_was_judged_and_shows_its_reach(tmp_path):
    data, _ = _as_swept(tmp_path, {"link_rate": ["100mbit", "1GbE"]},
                        lambda st: {"link_rate": 100 if st == 0 else 1000}, findings=[SEED])
    m = _section("crossover").build(data)
    md = "\n".join(_section("crossover").markdown(m))
    assert "band from the seed's claim \"All within 9 % of FC.\"" in md
    assert ("Judged at the plan's own point, link rate 1 Gbit/s ([lab.link] rate 1GbE); the crossover shows the "
            "others (link rate 100 Mbit/s). The sentences below show how far the seed's claim reaches") in md
    seed = _section("seed").build(data)
    assert seed.judged in "\n".join(_section("seed").markdown(seed))
    assert seed.judged.startswith("Judged at the plan's own point, link rate 1 Gbit/s")
    [v] = seed.verdicts
    assert v.parts and all(p.point.startswith("link_rate 1000 Mbit/s · ") for p in v.parts)
    from protolab.report.report_cli import report_json

    doc = report_json(RunDir.open(tmp_path / "run", write=False), tmp_path / "report.html")
    assert doc["claims_judged_at"] == {"link_rate": 1000} and doc["claims"][0]["verdict"] == v.verdict


def test_a_swept_plans_seed_table_judges_each_claim_at_every_swept_point_with_the_plans_own_marked(tmp_path):
    from protolab.analysis.claims import claim_verdicts

    data, records = _as_swept(tmp_path, {"link_rate": ["100mbit", "1GbE"]},
                              lambda st: {"link_rate": 100 if st == 0 else 1000}, findings=[SEED])
    m = _section("seed").build(data)
    assert m.reach_head == ("#", "§", "claim tested", "link rate 100 Mbit/s", "link rate 1 Gbit/s (the plan's)")
    [v] = m.verdicts
    at_100 = claim_verdicts(data.plan, records, at={"link_rate": 100})[0].verdict
    assert m.reach_rows == (("1", "§2.2", v.claim, at_100, v.verdict),)
    md = "\n".join(_section("seed").markdown(m))
    assert "How far each verdict reaches" in md and f"| 1 | §2.2 | {v.claim} | {at_100} | {v.verdict} |" in md
    assert "<th>link rate 1 Gbit/s (the plan&#39;s)</th>" in str(_section("seed").html(m, None))
