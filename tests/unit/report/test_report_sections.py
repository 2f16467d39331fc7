"""Report sections: one model each, rendered to report.md and report.html, so a section is in both or neither."""

from __future__ import annotations

import html as htmllib
import json
import shutil

import pytest
from markupsafe import Markup, escape

from conftest import DATA
from protolab.report import tables
from protolab.report.report_cli import write_report
from protolab.report.report_data import ReportData
from protolab.report.sections import SECTIONS, Page, built
from protolab.results.manifest import Manifest
from protolab.results.rundir import RunDir

GOLDEN = DATA / "golden"

#: A figure of each section's model that both formats must show (a new section adds its own here).
FIGURE = {
    "summary": lambda m: m.tables[0].rows[1][1].text,  # the first configuration's IOPS cell after the baseline
    "plan": lambda m: m.workloads[0].loads,
    "environment": lambda m: m.provenance["kernel"],
    "errors": lambda m: m.named[0].text(),
    "findings": lambda m: m.findings[0].text,
    "w": lambda m: m[0].rows[0][3],  # the first row's first metric, its median
    "not-measured": lambda m: m[0],
    "stages": lambda m: m.charts[0].title,
    "sessions": lambda m: m[1].text(),
    "vms": lambda m: f"{m.rows[0][1]:,.1f}",  # the first configuration's vCPU µs per I/O
    "seed": lambda m: m.rows()[0][2],  # the first finding in the seed's words
    "percentiles": lambda m: m.charts[0].title,
    "series": lambda m: m.charts[-1].title,
    "ceiling": lambda m: m.charts[0].title,
    "method": lambda m: f"±{m.noise_pct} % noise band",
    "crossover": lambda m: m.sentences[0][2],  # the first configuration's crossover, in words
    "added-time": lambda m: m.added[0],  # the first configuration's added time per I/O
    "capacity": lambda m: m.sentences[0][3],  # the first configuration's knee and capacity, in words
    "faults": lambda m: m.sentences[0][2],  # the configurations compared after the first fault, in words
    "verified": lambda m: m[-1].sentence(),  # the last configuration's MiB verified and its first bad offset
    "heatmap": lambda m: m.charts[0].title,  # the first configuration's heatmap at the highest load point
    "breakdown": lambda m: m.rows[-1][4],  # the last row's parts, µs per I/O
}


def _two_sessions(m: dict) -> None:
    first = dict(m["sessions"][0])
    m["sessions"] = [{**first, "how": "interrupted"}, {**first, "session": 2, "how": "complete"}]


def _errors(records: list) -> list:
    """The first two windows had I/O errors."""
    return [r.model_copy(update={"result": r.result.model_copy(update={
        "errors": 2, "error_messages": ["Input/output error: read offset=4096", "<b>5</b> & more"]})})
        if r.seq <= 2 else r for r in records]


def _faults(records: list) -> list:
    """Every window had port 0's link down from 1 s for 2 s and stalled from 1 s for 0.1 s × its seq (plan.faults)."""
    from protolab.results.faultwindow import FaultAction, FaultWindow

    def fw(r) -> FaultWindow:
        iops = [0 if 100 <= i < 100 + 10 * r.seq else 1000 + (i % 7) for i in range(600)]
        return FaultWindow(fault="port0-down", kind="link_down", at_s=1.0, duration_s=2.0, port=0, step_ms=10,
                           actions=[FaultAction(action="link_down port 0", planned_s=1.0, at_s=1.0, wall="w")],
                           iops=iops, lat_us=[None if v == 0 else 250.0 for v in iops[::10]])
    return [r.model_copy(update={"coords": {**r.coords, "fault": "port0-down"}, "fault": fw(r)}) for r in records]


def _verified(records: list) -> list:
    """method.verify: 64 MiB read back after each window; the baseline's clean, the other's third window had two
    bad chunks."""
    from protolab.results.records import Verified

    out = []
    for r in records:
        bad = [] if r.baseline or r.repeat != 3 else [1060864, 6291456]
        out.append(r.model_copy(update={"verification": Verified(
            algorithm="crc32c", verified_bytes=64 * 2**20, mismatches=len(bad), during_window=len(bad[:1]),
            first_bad_offset=bad[0] if bad else None, bad_offsets=bad, chunk=4096)}))
    return out


def _breakdown(records: list) -> list:
    """Every window over a device model (5 µs queue, the swept service time + 20 µs); iscsi's last repeat captured at
    both ports (the host's SRT 40 µs below fio's mean, the server's 25 µs below the host's)."""
    from protolab.results.records import DeviceTime, ServicePoint, ServiceTimes

    out = []
    for r in records:
        ios = r.result.read.ios + r.result.write.ios  # one request per I/O
        dev = DeviceTime(requests=ios, reads=ios, queue_us=5.0, service_us=float(r.coords["service_time"]) + 20)
        st = None
        if not r.baseline and r.repeat == 3:
            host = r.result.lat_mean_us - 40.0
            st = ServiceTimes(protocol="iscsi", start_s=1.0, seconds=0.3, points=[
                ServicePoint(point="h0/eth0", role="host", srt_us=host, pairs=900, frames=2000),
                ServicePoint(point="st/p0", role="server", srt_us=host - 25.0, pairs=900, frames=2000)])
        out.append(r.model_copy(update={"device_time": dev, "service_times": st}))
    return out


def _no_telemetry(records: list) -> list:
    """No CPU, packets or bytes were sampled."""
    return [r.model_copy(update={"telemetry": None}) for r in records]


#: name → (golden run, manifest edit, records edit): together they give every section something to say.
CASES = {"exchange-quick": ("exchange-quick", None, None),
         "emc-fill-aging-quick": ("emc-fill-aging-quick", None, None),
         "tr3916-vm-quick": ("tr3916-vm-quick", None, None),
         "v1-run": ("v1-run", None, None),
         "two-sessions": ("exchange-quick", _two_sessions, None),
         "io-errors": ("v1-run", None, _errors),
         "no-telemetry": ("v1-run", None, _no_telemetry),
         "verified": ("v1-run", None, _verified),
         "sweep-lab": ("sweep-lab", None, None),
         "capacity-lab": ("capacity-lab", None, None),
         "faults": ("v1-run", None, _faults),
         "heatmap": ("v1-run", None, None),
         "faults-heatmap": ("v1-run", None, _faults),
         "breakdown": ("sweep-lab", None, _breakdown)}


def _heatmaps(ids: list[str]) -> dict:
    """Every window's latency heatmap: the real fio logs of tests/data/fio-histlog (plan.heatmap_option)."""
    from protolab.analysis.heatmap import bin_window
    from protolab.engine.histlog import bin_edges_ns, read_hist_logs

    hm = bin_window(read_hist_logs(DATA / "fio-histlog" / "hl")[:2], bin_edges_ns(), t0_ms=300.0, window_ms=1000.0,
                    step_ms=100)
    return dict.fromkeys(ids, hm)


#: The cases whose windows have latency heatmaps.
HEATMAPS = {"heatmap": _heatmaps, "faults-heatmap": _heatmaps}


def _copy(tmp, name: str, edit=None):
    run = tmp / name
    src = GOLDEN / name / "run"
    shutil.copytree(src if src.is_dir() else DATA / name, run)
    if edit is not None:
        m = json.loads((run / "manifest.json").read_text())
        edit(m)
        (run / "manifest.json").write_text(json.dumps(m))
    return run


@pytest.fixture(scope="module")
def built_data(tmp_path_factory) -> dict[str, ReportData]:
    tmp, out = tmp_path_factory.mktemp("sections"), {}
    for case, (name, edit, records_edit) in CASES.items():
        rd = RunDir.open(_copy(tmp / case, name, edit), write=False)
        records = rd.records()
        out[case] = tables.build(rd.manifest(), records_edit(records) if records_edit else records,
                                 series=rd.series, intervals=rd.intervals, heatmaps=HEATMAPS.get(case))
    return out


def _page() -> Page:
    """Charts stand in as their id and title (drawing them is report.figures' part, tested there)."""
    return Page(lambda c: Markup(f'<figure id="chart-{escape(c.id)}">{escape(c.title)}</figure>'))


def _text(markup: str) -> str:
    return htmllib.unescape(str(markup))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_each_section_renders_one_model_to_both_formats(section, case, built_data):
    model = section.build(built_data[case])
    if model is None:
        return
    md, page = "\n".join(section.markdown(model)), section.html(model, _page())
    text = _text(page)
    for h in section.headings(model):
        assert h.title in md and h.title in text, (h, md[:300], text[:300])
        assert f'<section id="{h.anchor}">' in page
    figure = FIGURE[section.name](model)
    assert figure and figure in md and figure in text, figure
    assert page.count("<section") == page.count("</section>") == len(section.headings(model))
    assert md.startswith("\n") or md.startswith("##"), "a section's Markdown starts a paragraph of its own"


def test_every_section_has_something_to_say_in_some_case_and_a_figure_to_check(built_data):
    shown = {s.name for data in built_data.values() for s, _ in built(data)}
    assert shown == {s.name for s in SECTIONS} == set(FIGURE)
    assert len({s.name for s in SECTIONS}) == len(SECTIONS)


@pytest.mark.parametrize("case", ["tr3916-vm-quick", "two-sessions"])
def test_the_written_reports_hold_a_section_in_both_formats_or_in_neither(case, tmp_path):
    name, edit, _ = CASES[case]
    run = _copy(tmp_path, name, edit)
    write_report(RunDir.open(run), figures=False)
    md, page = (run / "report.md").read_text(), (run / "report.html").read_text()
    text = _text(page)
    data = tables.build(RunDir.open(run, write=False).manifest(), RunDir.open(run, write=False).records())
    shown = dict(built(data))
    for s in SECTIONS:
        if s in shown:
            for h in s.headings(shown[s]):
                assert h.title in md and h.title in text and f'<section id="{h.anchor}">' in page, h
                assert (f'<a href="#{h.anchor}">{escape(h.nav)}</a>' in page) == bool(h.nav), h
        else:
            assert f'<section id="{s.name}">' not in page and f"## {s.title}" not in md, s.name
    # in report order in both files: the page's sections, report.md's headings (a workload's: its caption)
    heads = [h for s in SECTIONS if s in shown for h in s.headings(shown[s])]
    assert [p.split('"')[0] for p in page.split('<section id="')[1:]] == [h.anchor for h in heads]
    md_heads = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    with_heading = [h.title for h in heads if h.anchor != "not-measured"]  # one line, no heading
    assert len(md_heads) == len(with_heading)
    assert all(line.startswith(t) for line, t in zip(md_heads, with_heading)), (md_heads, with_heading)


def test_the_vm_and_seed_sections_are_in_both_formats(tmp_path):
    run = _copy(tmp_path, "tr3916-vm-quick")
    write_report(RunDir.open(run), figures=False)
    md, html = (run / "report.md").read_text(), (run / "report.html").read_text()
    assert "## Virtual machines as load hosts" in md and '<section id="vms">' in html
    assert "vCPU µs/IO" in md and "<th>vCPU µs/IO</th>" in html and "Under TCG every guest instruction" in html
    assert "## The seed's claims, tested" in md and '<section id="seed">' in html
    assert "## Sessions" not in md and 'id="sessions"' not in html  # one session: nothing to say


def test_the_sessions_section_lists_each_session_in_both_formats(tmp_path):
    run = _copy(tmp_path, "exchange-quick", _two_sessions)
    write_report(RunDir.open(run), figures=False)
    md, html = (run / "report.md").read_text(), (run / "report.html").read_text()
    assert "## Sessions" in md and '<section id="sessions">' in html
    assert md.count("- session ") == 2 and html.count("<li>session ") == 2
    assert "ended interrupted" in md and "ended interrupted" in html
    assert '<a href="#sessions">sessions</a>' in html  # the page's navigation lists it


def test_a_session_found_killed_says_so_in_the_sessions_section(tmp_path):
    def killed(m: dict) -> None:
        _two_sessions(m)
        m["sessions"][0] = {**m["sessions"][0], "ended": None, "killed": "2026-12-07T06:00:00+00:00"}

    run = _copy(tmp_path, "exchange-quick", killed)
    write_report(RunDir.open(run), figures=False)
    md = (run / "report.md").read_text()
    assert "– ?, ended killed (found at 2026-12-07T06:00:00+00:00)" in md and md.count("ended interrupted") == 0


def test_io_errors_are_named_in_both_formats_and_escaped_on_the_page(built_data):
    data = built_data["io-errors"]
    section = next(s for s in SECTIONS if s.name == "errors")
    model = section.build(data)
    md, page = "\n".join(section.markdown(model)), str(section.html(model, _page()))
    assert model.count == 2 and "**2 measured windows had I/O errors**" in md
    assert "<b>2 measured windows had I/O errors</b>" in page
    assert "&lt;b&gt;5&lt;/b&gt; &amp; more" in page and "<b>5</b>" not in page


def test_the_verified_section_says_each_configuration_s_mib_and_mismatches(built_data):
    data = built_data["verified"]
    section = next(s for s in SECTIONS if s.name == "verified")
    model = section.build(data)
    assert [c.configuration for c in model] == data.configurations
    by = {c.configuration: c for c in model}
    windows = {c: sum(1 for r in data.records if r.configuration == c) for c in data.configurations}
    clean, other = by[data.baseline], next(c for c in model if c.configuration != data.baseline)
    assert clean.sentence() == (f"{data.baseline}: {64 * windows[data.baseline]:,} MiB verified (crc32c, "
                                f"{windows[data.baseline]} windows), 0 mismatches")
    bad_cell = next(r.cell_id for r in data.records if r.configuration == other.configuration and r.repeat == 3)
    assert other.sentence().endswith(f"2 mismatches, the first bad offset 1,060,864 (cell {bad_cell}); 1 found "
                                     "during a window")
    md = "\n".join(section.markdown(model))
    assert md.count("- ") >= 2 and clean.sentence() in md and other.sentence() in md
    assert section.build(built_data["v1-run"]) is None  # not verified: not in the report


def test_a_workload_part_holds_its_summary_table_on_the_page_too(built_data):
    data = built_data["exchange-quick"]
    section = next(s for s in SECTIONS if s.name == "w")
    model = section.build(data)
    assert [h.anchor for h in section.headings(model)] == ["w-1", "w-2"]
    assert [p.name for p in model] == data.workloads
    page = str(section.html(model, _page()))
    for p in model:
        for row in p.rows:
            assert f"<td>{escape(row[1])}</td>" in page and row[3] in page  # each configuration's median IOPS
        assert all(f'id="chart-{c.id}"' in page for c in p.charts)


def test_a_section_with_nothing_to_say_is_in_neither_format():
    empty = ReportData(run_id="r", manifest=Manifest.model_validate({"sessions": [{"session": 1}]}), plan=None,
                       baseline="", workloads=[], configurations=[], rows=[], verdicts={}, metrics=[], absent=[],
                       findings=[])
    # only the environment (its status) and the method are said of every run
    assert [s.name for s, _ in built(empty)] == ["environment", "method"]


def test_a_stored_run_with_its_studys_claims_opens_with_the_verdicts_and_gives_them_as_json(tmp_path):
    """exchange-quick (stored before claims) given today's exchange claims: the verdict table is report.md's first
    section, report.html's first <section>, and `report --json` has one object per claim with its parts."""
    from protolab.plan.load import load_builtin
    from protolab.report.report_cli import report_json

    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "exchange-quick" / "run", run)
    m = json.loads((run / "manifest.json").read_text())
    plan, _ = load_builtin("exchange", "quick")
    m["plan"]["seed_findings"] = [json.loads(f.model_dump_json()) for f in plan.seed_findings]
    (run / "manifest.json").write_text(json.dumps(m))
    rd = RunDir.open(run)
    path = write_report(rd, figures=False)
    md = (run / "report.md").read_text()
    # the summary first, then the seed's claims
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[:2] == ["## Summary", "## The seed's claims, tested"]
    sections = (run / "report.html").read_text().split("<section")
    assert sections[1].startswith(' id="summary"') and sections[2].startswith(' id="seed"')
    doc = report_json(rd, path)
    # the second finding states no claim; the third (the conclusion's latency and host CPU) two
    assert [(c["finding"], c["section"]) for c in doc["claims"]] == [(1, "Results"), (3, "Conclusion"),
                                                                    (3, "Conclusion")]
    claim = doc["claims"][0]
    assert claim["finding"] == 1 and claim["verdict"] in ("reproduced", "not reproduced", "opposite", "inconclusive")
    # two workloads × two metrics; one part per workload decides (its best metric)
    assert {p["subject"] for p in claim["parts"]} == {"iscsi-4x1g"} and len(claim["parts"]) == 4
    assert sum(p["decisive"] for p in claim["parts"]) == 2
    assert all(p["reference"] == "iscsi-1x1g" and p["metric"] in ("iops", "lat_p95_us") for p in claim["parts"])
    # the detectable difference of every decisive part, its range in the table, and what would decide the claim
    decisive = [p for p in claim["parts"] if p["decisive"]]
    assert all(p["mdd_pct"] is not None and p["mdd_pct"] >= 2.0 for p in decisive)
    lo, hi = claim["mdd_pct"]
    assert (lo, hi) == (min(p["mdd_pct"] for p in decisive), max(p["mdd_pct"] for p in decisive))
    figures = claim["figures"]
    if claim["verdict"] == "inconclusive":
        n = claim["repeats_to_decide"]
        assert n > 3 and f"about {n} repeats a side would decide it" in claim["decide"]
        figures += "; " + claim["decide"]
    assert 10 <= lo < hi  # this stored run's 3 repeats of 10 s: tens of % (51–90 % when written)
    assert "| # | § | the seed said | claim tested | verdict | figures | MDD |" in md
    assert "| 1 | Results | Due to the bursty nature of Exchange I/O," in md
    assert "MDD: the smallest difference each comparison's test could have called with 80 % power" in md
    assert f"| **{claim['verdict']}** | {figures} | {lo:.0f}–{hi:.0f} % |" in md


def test_windows_whose_fio_statuses_fell_out_of_step_are_named_in_the_method_in_both_formats(tmp_path):
    from protolab.report.sections.method_section import MethodSection

    rd = RunDir.open(_copy(tmp_path, "v1-run"), write=False)
    records = [r.model_copy(update={"out_of_step_s": 0.8 if r.seq == 1 else 1.6 if r.seq == 2 else None})
               for r in rd.records()]
    data = tables.build(rd.manifest(), records)
    section = MethodSection()
    model = section.build(data)
    first, second = (r.cell_id for r in sorted(records, key=lambda r: r.seq)[:2])
    said = (f"2 of {len(records)} windows had fio servers' statuses out of step by 0.8–1.6 s (a busy machine delays "
            f"fio's status timer), so their window boundaries are uncertain by as much: {first} (0.8 s), "
            f"{second} (1.6 s).")
    assert model.out_of_step == said and said in section.markdown(model)
    assert said in _text(section.html(model, _page()))
    assert section.build(tables.build(rd.manifest(), rd.records())).out_of_step == ""  # none out of step: silent


def test_the_plan_shows_a_targets_url_not_fios_escaped_file_name(built_data):
    section = next(s for s in SECTIONS if s.name == "plan")
    model = section.build(built_data["sweep-lab"])  # its manifest holds fio's 'iscsi\://…\:3260/…'
    line = next(c for c in model.configurations if c.name == "iscsi")
    assert line.description == ("iscsi via libiscsi: iscsi://198.18.0.1:3260/iqn.2024-01.org.protolab:pswpw.iscsi/1 "
                                "in netns pswpw-h0")
    assert "\\:" not in "\n".join(section.markdown(model)) and "\\:" not in str(section.html(model, _page()))


def test_heatmaps_one_per_configuration_at_the_highest_load_point_and_the_faults_latency_panel(built_data):
    data = built_data["heatmap"]
    maps = [c for c in data.charts if c.section == "heatmap"]
    top = max(r.total_oio for r in data.records)
    tops = {r.configuration for r in data.records if r.total_oio == top}
    assert sorted(c.title.split(": ")[1].split(",")[0] for c in maps) == sorted(tops)
    one = _heatmaps(["x"])["x"]
    for c in maps:
        repeats = len({r.repeat for r in data.records if r.total_oio == top and c.title.split(": ")[1].startswith(
            r.configuration + ",")})
        assert c.kind == "heatmap" and c.edges == one.edges_us() and len(c.series) == one.rows
        assert sum(row["ios"] for row in c.table) == repeats * one.total()  # the repeats' windows added
        assert f"{repeats} repeats added" in c.note
    assert "per 0.1 s" in maps[0].title and "log_hist_msec" in data.notes["heatmap"]
    # with faults, the faults' latency panel is a heatmap per configuration, the fault's time hatched; without
    # heatmaps, the mean latency per 100 ms
    with_maps = [c for c in built_data["faults-heatmap"].charts if c.section == "faults"]
    assert {c.kind for c in with_maps} == {"timeseries", "heatmap"}
    assert all(c.span == (1.0, 3.0) for c in with_maps if c.kind == "heatmap")
    assert not any(c.id.endswith("-latency") for c in with_maps)
    plain = [c for c in built_data["faults"].charts if c.section == "faults"]
    assert {c.kind for c in plain} == {"timeseries"} and any(c.id.endswith("-latency") for c in plain)
    assert not [c for c in built_data["faults-heatmap"].charts if c.section == "heatmap"]  # faulted: the panel only
