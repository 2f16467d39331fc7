"""A real run's report opened in headless Chromium: every chart drawn with its series, no page errors, files exist."""

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import shared_plan

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROTOLAB = [sys.executable, "-m", "protolab.cli"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")]


def protolab(*args, cwd):
    return subprocess.run([*PROTOLAB, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    plan = root / "plan.toml"
    plan.write_text(shared_plan("psync-io_uring", name='"browser"', url=f'"{root / "scratch.dat"}"', warmup='"0s"'))
    done = protolab("run", str(plan), "--results", str(root / "results"), cwd=root)
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in (root / "results").iterdir() if p.is_dir()]
    report = protolab("report", str(run), cwd=root)
    assert report.returncode == 0, report.stderr
    assert f"report: {run / 'report.html'}" in report.stdout.replace("\n", "")
    return run


class Dom(HTMLParser):
    """For each data-chart figure: the series drawn inside its SVG (name → colours seen)."""

    def __init__(self):
        super().__init__()
        self.charts: dict[str, dict] = {}
        self.root_attrs: dict[str, str] = {}
        self.current: str | None = None
        self.series: set | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root_attrs = a
        if "data-chart" in a:
            self.current = a["data-chart"]
            self.charts[self.current] = {"expected": int(a["data-expected-series"]), "series": {}}
        if "data-series" in a and self.current:
            self.series = self.charts[self.current]["series"].setdefault(a["data-series"], set())
        elif self.series is not None:
            m = re.search(r"(?:stroke|fill): (#[0-9a-f]{6})", a.get("style", ""))
            if m:
                self.series.add(m.group(1))

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag == "g":
            self.series = None
        elif tag == "figure":
            self.current = None


def chromium_dom(html: Path, profile: Path, *extra: str) -> tuple[str, str]:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
         *extra, "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_every_chart_draws_its_series_in_one_colour_per_configuration_without_errors(real_run, tmp_path):
    dom_text, log = chromium_dom(real_run / "report.html", tmp_path / "profile")
    dom = Dom()
    dom.feed(dom_text)
    # 1 workload: IOPS, average and p99 service time, load-generator and machine CPU per I/O (5 relative
    # charts), 2 percentile charts (one per load point), 2 per-second series charts (one per load point)
    expected = {"iops-tr3808-4k": 2, "lat_mean_us-tr3808-4k": 2, "lat_p99_us-tr3808-4k": 2,
                "cpu_us_per_io_loadgen-tr3808-4k": 2, "cpu_us_per_io_total-tr3808-4k": 2,  # psync and io_uring
                "percentiles-tr3808-4k-0": 2, "percentiles-tr3808-4k-1": 2,
                "series-tr3808-4k-0": 4, "series-tr3808-4k-1": 4}  # 2 configurations × 2 repeats
    assert {k: c["expected"] for k, c in dom.charts.items()} == expected
    colours: dict[str, set[str]] = {}
    for chart_id, c in dom.charts.items():
        assert len(c["series"]) == c["expected"] >= 1, chart_id  # every series drawn, none empty
        for name, seen in c["series"].items():
            assert seen, (chart_id, name)
            colours.setdefault(name.rsplit(" r", 1)[0], set()).update(seen)
    assert set(colours) == {"psync", "io_uring"}
    assert all(len(c) == 1 for c in colours.values()), colours  # a configuration keeps its colour everywhere
    assert colours["psync"] != colours["io_uring"]
    assert dom.root_attrs.get("data-errors") == "0"
    console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    assert 'id="error-banner" hidden' in dom_text


_MEASURE = """<script>
window.addEventListener("load", function () {
  var bad = [], seen = 0;
  document.querySelectorAll("th").forEach(function (th) {
    if (th.textContent.trim() !== "verdict") { return; }
    seen += 1;
    var box = th.closest(".table"), r = th.getBoundingClientRect();
    if (r.right > window.innerWidth || (box && box.scrollWidth > box.clientWidth + 1)) { bad.push(r.right); }
  });
  var labels = [];
  document.querySelectorAll("figure.chart svg").forEach(function (svg) {
    var b = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width && (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1)) {
        labels.push(t.textContent);
      }
    });
  });
  document.documentElement.setAttribute("data-width", String(window.innerWidth));
  document.documentElement.setAttribute("data-verdicts", String(seen));
  document.documentElement.setAttribute("data-verdicts-hidden", String(bad.length));
  document.documentElement.setAttribute("data-labels-clipped", labels.join("|"));
});
</script></body>"""


def test_at_1366_px_the_verdict_column_is_in_view_and_no_label_is_clipped(real_run, tmp_path):
    """Laid out by Chromium at 1366 px: every verdict column header inside the window (nothing scrolled off),
    every chart label inside its SVG; and a screenshot of the page at that width."""
    page = real_run / "report-1366.html"
    page.write_text((real_run / "report.html").read_text().replace("</body>", _MEASURE, 1))
    try:
        dom_text, _ = chromium_dom(page, tmp_path / "profile", "--window-size=1366,900")
    finally:
        page.unlink()
    root = Dom()
    root.feed(dom_text)
    a = root.root_attrs
    assert a.get("data-width") == "1366"
    assert int(a["data-verdicts"]) == 5  # the five relative charts' tables
    assert a["data-verdicts-hidden"] == "0"
    assert a["data-labels-clipped"] == ""
    shot = tmp_path / "shot.png"
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1366,2400",
                           f"--screenshot={shot}", (real_run / "report.html").as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(shot.read_bytes()[16:20], "big") == 1366  # PNG width


def test_figures_and_tables_exist_for_every_chart(real_run, tmp_path):
    dom_text, _ = chromium_dom(real_run / "report.html", tmp_path / "profile")
    ids = re.findall(r'data-chart="([^"]+)"', dom_text)
    assert len(ids) == 9
    for cid in ids:
        assert (real_run / "figures" / f"{cid}.png").stat().st_size > 1000
        svg = (real_run / "figures" / f"{cid}.svg").read_text()
        assert svg.lstrip().startswith("<?xml")
        assert svg[svg.index("<svg"):].strip() in dom_text or svg[svg.index("<svg"):svg.index("<svg") + 200] in \
            (real_run / "report.html").read_text()  # the page shows the saved picture
        assert (real_run / "tables" / f"{cid}.csv").stat().st_size > 0
    assert (real_run / "report.md").read_text().startswith("# protolab: browser — run ")


def test_page_reports_its_own_script_errors(real_run, tmp_path):
    """The error hook works: a page whose script throws shows the banner and counts the error."""
    broken = tmp_path / "broken.html"
    broken.write_text((real_run / "report.html").read_text().replace(
        "</body>", "<script>noSuchFunction();</script></body>", 1))
    dom_text, log = chromium_dom(broken, tmp_path / "profile")
    dom = Dom()
    dom.feed(dom_text)
    assert dom.root_attrs.get("data-errors") == "1"
    assert "noSuchFunction is not defined" in dom_text
    assert any("Uncaught ReferenceError" in line for line in log.splitlines())


_FIRST_SCREEN = """<script>
window.addEventListener("load", function () {
  var m = document.querySelector(".matrix"), r = m ? m.getBoundingClientRect() : null;
  document.documentElement.setAttribute("data-matrix", r ? [r.top, r.bottom].join(",") : "none");
  document.documentElement.setAttribute("data-height", String(window.innerHeight));
});
</script></body>"""


def test_the_summary_matrix_is_on_the_first_screen_at_1280_by_800(real_run, tmp_path):
    """report.html opens with the summary: laid out by Chromium at 1280×800 the matrix's top and bottom lie within
    the first screen; a screenshot of that screen is kept in the test's folder."""
    page = real_run / "report-1280.html"
    page.write_text((real_run / "report.html").read_text().replace("</body>", _FIRST_SCREEN, 1))
    try:
        dom_text, _ = chromium_dom(page, tmp_path / "profile", "--window-size=1280,800")
    finally:
        page.unlink()
    root = Dom()
    root.feed(dom_text)
    top, bottom = (float(x) for x in root.root_attrs["data-matrix"].split(","))
    height = int(root.root_attrs["data-height"])
    assert 0 < top < bottom <= height <= 800, (top, bottom, height)
    assert dom_text.index('id="summary"') < dom_text.index('id="findings"')
    shot = tmp_path / "first-screen.png"
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1280,800",
                           f"--screenshot={shot}", (real_run / "report.html").as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(shot.read_bytes()[16:20], "big") == 1280  # PNG width
    assert int.from_bytes(shot.read_bytes()[20:24], "big") == 800  # and height: the first screen


@pytest.mark.parametrize("stored", ["v1-run", "exchange-quick"])
def test_a_lab_runs_report_has_every_chart_label_and_note_inside_its_chart(stored, tmp_path):
    """A lab run's report (the demo's protocols with server CPU and packets per I/O; exchange's long runs): laid out
    by Chromium at 1366 px, no text of any chart — its notes included — runs past the chart's edge, and no page
    error."""
    from conftest import DATA

    src = DATA / "golden" / stored / "run"
    run = tmp_path / stored
    shutil.copytree(src if src.is_dir() else DATA / stored, run)
    done = protolab("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = (run / "report.html").read_text()
    assert "cpu_us_per_io_server" in html  # the server-CPU chart is there
    page = run / "report-1366.html"
    page.write_text(html.replace("</body>", _MEASURE, 1))
    dom_text, log = chromium_dom(page, tmp_path / "profile", "--window-size=1366,900")
    root = Dom()
    root.feed(dom_text)
    assert root.root_attrs["data-labels-clipped"] == "", root.root_attrs["data-labels-clipped"]
    assert root.root_attrs["data-verdicts-hidden"] == "0" and root.root_attrs.get("data-errors") == "0"
    assert "<text" in dom_text  # chart text is text (checked above), not paths
