"""The report written into a run directory: HTML, Markdown, figures and CSV tables, from synthetic records."""

import csv
import dataclasses
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from protolab.plan.migrate import PLAN_FORMAT
from protolab.report.report_cli import write_report
from protolab.report.tables import build, protocol_of
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import CellRecord, CellResult, DirectionResult, SeriesRow, Steadiness
from protolab.results.rundir import RunDir
from protolab.results.synthetic import telemetry_for

W4K = {"name": "w4k", "block_size": 4096, "read_pct": 75, "random_pct": 100, "oio": 4}
W8K = {"name": "w8k", "block_size": 8192, "read_pct": 75, "random_pct": 100, "oio": 4}


def plan(configs, lab=None):
    return {"name": "synthetic", "description": "test", "baseline": configs[0]["name"], "workloads": [W4K, W8K],
            "configurations": configs, "load_points": [{"streams": 1}, {"streams": 2}],
            "method": {"warmup": 1, "duration": 2, "repeats": 4, "data_size": "32M"}, "lab": lab}


def make_run(root: Path, configs, *, telemetry=False, lab=None, repeats=4) -> RunDir:
    rd = RunDir.create(root, "synthetic", RunStart(
        plan=plan(configs, lab), plan_text="", plan_format=PLAN_FORMAT,
        provenance=Provenance(protolab="0.1.0", kernel="6.1", fio_version="fio-3.33")))
    rd.events.session_ended(0, "complete")
    rng = np.random.default_rng(3)
    seq = 0
    for w in ("w4k", "w8k"):
        for li in (0, 1):
            for k in range(repeats):
                for ci, c in enumerate(configs):
                    seq += 1
                    iops = float(rng.normal(10000 * (1 + 0.25 * ci) * (li + 1), 50))
                    lat = 1e6 * 4 * (li + 1) / iops
                    tel, steady = None, None
                    if telemetry:
                        tel = telemetry_for(int(iops * 2), cpu_us_per_io_loadgen=5.0 + ci,
                                            cpu_us_per_io_server=float(rng.normal(8, 0.05)),
                                            packets_per_io=3.0 + ci * 0.5, wire_bytes_per_io=4500.0,
                                            cpu_us_per_io_total=20.0)
                        steady = Steadiness(steady=True, range_pct=2.0, excursion_pct=1.0, window_start=0,
                                            window=5, reason="steady")
                        rd.add_series([SeriesRow(seq=seq, cell_id=f"{w}__{c['name']}__{li}__r{k + 1}",
                                                 phase="measure", host="all", t_s=i + 1.0,
                                                 iops=iops * (1 + 0.01 * np.sin(i))) for i in range(6)])
                    d = DirectionResult(ios=int(iops * 2), iops=iops, bins_ns={int(lat * 900): 50, int(lat * 1000): 45,
                                                                                 int(lat * 4000): 5})
                    res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(),
                                     lat_mean_us=lat, percentiles_us={"p99": lat * 4}, jobs=1, runtime_s=2.0,
                                     errors=0)
                    rd.add_record(CellRecord(run_id=rd.run_id, seq=seq, cell_id=f"{w}__{c['name']}__{li}__r{k + 1}",
                                             workload=w, configuration=c["name"], baseline=ci == 0, load_index=li,
                                             hosts=1, streams_per_host=li + 1, oio_per_stream=4,
                                             total_oio=4 * (li + 1), repeat=k + 1, started="", ended="", result=res,
                                             telemetry=tel, steady=steady, raw_output="", job_file=""))
    return rd


LOCAL = [{"name": "psync", "target": "/tmp/x.dat", "ioengine": "psync"},
         {"name": "io_uring", "target": "/tmp/x.dat", "ioengine": "io_uring"},
         {"name": "libaio", "target": "/tmp/x.dat", "ioengine": "libaio"}]
LAB = [{"name": "iscsi-1500", "target": "lab:iscsi"}, {"name": "iscsi-9000", "target": "lab:iscsi",
                                                       "link": {"mtu": 9000}},
       {"name": "nfs-1500", "target": "lab:nfs"}, {"name": "local", "target": "/dev/null"}]


class Charts(HTMLParser):
    """Collects data-chart elements, the series drawn inside each (name → colours), and every URL."""

    def __init__(self):
        super().__init__()
        self.charts, self.urls, self.current, self.series = {}, [], None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]
        if "data-chart" in a:
            self.current = a["data-chart"]
            self.charts[self.current] = {"expected": int(a["data-expected-series"]), "kind": a["data-kind"],
                                         "series": {}}
        if "data-series" in a and self.current:
            self.series = self.charts[self.current]["series"].setdefault(a["data-series"], set())
        elif self.series is not None and tag in ("path", "use"):
            style = a.get("style", "")
            m = re.search(r"(?:stroke|fill): (#[0-9a-f]{6})", style)
            if m:
                self.series.add(m.group(1))

    def handle_endtag(self, tag):
        if tag == "g":
            self.series = None
        if tag == "figure":
            self.current = None


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    rd = make_run(tmp_path_factory.mktemp("runs"), LOCAL, repeats=6)
    write_report(rd)
    return rd


def test_files_written_for_every_chart(local_run):
    p = local_run.path
    data = build(local_run.manifest(), local_run.records(), series=local_run.series())
    # 2 workloads × 3 metrics (IOPS, avg, p99) + 2 × 2 percentile charts; no series, no ceiling
    assert [c.kind for c in data.charts].count("relative") == 6
    assert [c.kind for c in data.charts].count("percentiles") == 4
    assert len(data.charts) == 10
    for c in data.charts:
        assert (p / "figures" / f"{c.id}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (p / "figures" / f"{c.id}.svg").read_bytes()[:2000]
        with open(p / "tables" / f"{c.id}.csv") as f:
            assert len(list(csv.DictReader(f))) == len(c.table) > 0
    assert (p / "report.html").stat().st_size > 10_000
    assert (p / "tables" / "summary.csv").is_file() and (p / "tables" / "findings.csv").is_file()


def test_html_draws_every_series_in_one_colour_per_configuration_and_fetches_nothing(local_run):
    text = (local_run.path / "report.html").read_text()
    parser = Charts()
    parser.feed(text)
    data = build(local_run.manifest(), local_run.records(), series=local_run.series())
    assert set(parser.charts) == {c.id for c in data.charts} and len(parser.charts) == 10
    colours: dict[str, set[str]] = {}
    for cid, chart in parser.charts.items():
        assert chart["expected"] == len(chart["series"]) == 3, cid  # every series drawn, inline SVG
        for name, seen in chart["series"].items():
            assert seen, (cid, name)
            colours.setdefault(name, set()).update(seen)
    assert set(colours) == {"psync", "io_uring", "libaio"}
    assert all(len(c) == 1 for c in colours.values()), colours  # one colour per configuration, every chart
    assert len({next(iter(c)) for c in colours.values()}) == 3
    # the page's picture is the saved figure: the same SVG, named series included
    svg = (local_run.path / "figures" / "iops-w4k.svg").read_text()
    assert svg[svg.index("<svg"):].strip() in text
    rel = next(c for c in data.charts if c.id == "iops-w4k")
    assert [s.name for s in rel.series] == ["psync", "io_uring", "libaio"]
    assert rel.series[0].values == [100.0, 100.0]
    assert rel.series[1].values[0] == pytest.approx(125, abs=2)
    assert rel.series[1].low[0] < rel.series[1].values[0] < rel.series[1].high[0]
    assert "<script" not in text.split("</head>")[1]  # no drawing code: the charts are the SVG
    assert not [u for u in parser.urls if re.match(r"(?i)^(https?:)?//", u)]
    assert "default-src 'none'" in text  # the page's CSP forbids every fetch
    assert "above 100 = more IOPS" in text and "above 100 = more latency" in text
    assert "service time" in text


def test_html_says_what_was_not_measured(local_run):
    text = (local_run.path / "report.html").read_text()
    for what in ("load-generator CPU per I/O", "server CPU per I/O", "packets per I/O"):
        assert f"{what}: not measured in this run." in text
    assert "per-second series not measured in this run" in text
    assert "no link model for local targets" in text


def test_markdown_summary(local_run):
    md = (local_run.path / "report.md").read_text()
    assert md.startswith("# protolab: synthetic — run ")
    assert "| load point | configuration | n | IOPS | % | avg µs | % | p99 µs | % |" in md
    line = next(l for l in md.splitlines() if l.startswith("| 1×1×4=4 | io_uring |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2] == "6" and re.fullmatch(r"12\d \(\d+–\d+\) ↑", cells[4])
    assert "## Findings" in md and "more IOPS than psync at every load point" in md


def test_lab_run_with_telemetry_has_cpu_series_and_ceiling(tmp_path):
    rd = make_run(tmp_path, LAB, telemetry=True, lab={"link": {"rate": "10GbE", "mtu": 1500}})
    write_report(rd, figures=False)
    assert not (rd.path / "figures").exists()
    data = build(rd.manifest(), rd.records(), series=rd.series())
    kinds = [c.kind for c in data.charts]
    assert kinds.count("relative") == 2 * 7  # IOPS, avg, p99, CPU: load generator, server, machine; packets
    assert kinds.count("series") == 4 and kinds.count("ceiling") == 2
    series = next(c for c in data.charts if c.kind == "series")
    assert len(series.series) == 4 * 4  # configurations × repeats
    ceiling = next(c for c in data.charts if c.id == "ceiling-w4k")
    assert [s.name for s in ceiling.series] == ["iscsi-1500", "iscsi-9000", "nfs-1500"]
    mtus = {row["configuration"]: row["MTU"] for row in ceiling.table}
    assert mtus == {"iscsi-1500": 1500, "iscsi-9000": 9000, "nfs-1500": 1500}
    assert all(0 < v < 100 for s in ceiling.series for v in s.values)
    assert data.notes["ceiling"].startswith("no link model for local targets (local); with segmentation offloads "
                                            "on (the lab's default) interfaces count segments handed to the NIC")
    assert all(row["frames/I/O measured"] is None and row["offloads"] == "on" for row in ceiling.table)
    text = (rd.path / "report.html").read_text()
    assert "not measured in this run" not in text
    assert "more CPU" in text and "server CPU per I/O" in text and "machine CPU per I/O" in text


def test_protocol_of_target_urls():
    assert [protocol_of(u) for u in ("iscsi://h/iqn/0", "nfs://h/e", "nbd://h", "lab:iscsi", "lab:nfs", "/dev/sdb",
                                     "results/x.dat")] == ["iscsi", "nfs", "nbd", "iscsi", "nfs", None, None]


def test_the_page_puts_each_drawn_chart_at_its_figure_and_the_runs_text_cannot_ask_for_one(local_run, monkeypatch):
    """The page is rendered while the charts are drawn, with a mark per chart; the drawn SVGs fill the marks. A
    plan's text shaped like a mark reaches the page escaped, and stays as it was."""
    from protolab.report import html
    from protolab.report.figures import Drawn

    data = build(local_run.manifest(), local_run.records(), series=local_run.series())
    data = dataclasses.replace(data, plan=data.plan.model_copy(update={"description": "see <!--feed:0--> here"}))
    monkeypatch.setattr(html.secrets, "token_hex", lambda n: "feed")  # the token the plan's text guessed
    fill = html.page(data)
    text = fill({c.id: Drawn(c.id, f'<?xml version="1.0"?>\n<svg id="drawn-{c.id}"></svg>', []) for c in data.charts})
    assert "see &lt;!--feed:0--&gt; here" in text and "<!--feed:" not in text
    for c in data.charts:
        assert text.count(f'<svg id="drawn-{c.id}">') == 1
        figure = text.split(f'data-chart="{c.id}"')[1].split("</figure>")[0]
        assert f'<svg id="drawn-{c.id}">' in figure
    assert "<?xml" not in text  # inline: without the XML prolog
