"""A real run's report opened in headless Chromium: every chart drawn with its series, no page errors, files exist."""

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROTOLAB = [sys.executable, "-m", "protolab.cli"]

PLAN = """
name = "browser"
description = "e2e: psync vs io_uring on a scratch file"
baseline = "psync"
workloads = ["tr3808-4k"]

[targets.scratch]
url = "{target}"

[[configurations]]
name = "psync"
target = "scratch"
ioengine = "psync"

[[configurations]]
name = "io_uring"
target = "scratch"
ioengine = "io_uring"

[[load_points]]
streams = 1
oio = 1

[[load_points]]
streams = 2
oio = 4

[method]
warmup = "1s"
duration = "2s"
repeats = 2
data_size = "32M"
"""

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")]


def protolab(*args, cwd):
    return subprocess.run([*PROTOLAB, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    plan = root / "plan.toml"
    plan.write_text(PLAN.format(target=root / "scratch.dat"))
    done = protolab("run", str(plan), "--results", str(root / "results"), cwd=root)
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in (root / "results").iterdir() if p.is_dir()]
    report = protolab("report", str(run), cwd=root)
    assert report.returncode == 0, report.stderr
    assert f"report: {run / 'report.html'}" in report.stdout.replace("\n", "")
    return run


class Dom(HTMLParser):
    """Counts, for each data-chart element, the data-series elements drawn inside it."""

    def __init__(self):
        super().__init__()
        self.stack: list[tuple[str, str | None]] = []
        self.charts: dict[str, dict] = {}
        self.root_attrs: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root_attrs = a
        chart = a.get("data-chart")
        if chart:
            self.charts[chart] = {"expected": int(a["data-expected-series"]), "series": 0,
                                  "drawn": a.get("data-drawn")}
        inside = next((c for _, c in reversed(self.stack) if c), None)
        if "data-series" in a and inside:
            self.charts[inside]["series"] += 1
        if tag not in ("rect", "line", "circle", "path", "i", "br", "meta", "input", "img") or chart:
            self.stack.append((tag, chart))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        inside = next((c for _, c in reversed(self.stack) if c), None)
        if "data-series" in a and inside:
            self.charts[inside]["series"] += 1

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break


def chromium_dom(html: Path, profile: Path) -> tuple[str, str]:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
         "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_every_chart_draws_its_series_without_errors(real_run, tmp_path):
    dom_text, log = chromium_dom(real_run / "report.html", tmp_path / "profile")
    dom = Dom()
    dom.feed(dom_text)
    # 1 workload: IOPS, average and p99 service time, load-generator CPU per I/O (4 relative charts),
    # 2 percentile charts (one per load point), 2 per-second series charts (one per load point)
    expected = {"iops-tr3808-4k": 2, "lat_mean_us-tr3808-4k": 2, "lat_p99_us-tr3808-4k": 2,
                "cpu_us_per_io_loadgen-tr3808-4k": 2,  # psync and io_uring
                "percentiles-tr3808-4k-0": 2, "percentiles-tr3808-4k-1": 2,
                "series-tr3808-4k-0": 4, "series-tr3808-4k-1": 4}  # 2 configurations × 2 repeats
    assert {k: c["expected"] for k, c in dom.charts.items()} == expected
    for chart_id, c in dom.charts.items():
        assert c["series"] == c["expected"], chart_id
        assert c["drawn"] == str(c["expected"]), chart_id
    assert dom.root_attrs.get("data-errors") == "0"
    assert dom.root_attrs.get("data-charts-drawn") == "8"
    console = [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    assert 'id="error-banner" hidden' in dom_text


def test_figures_and_tables_exist_for_every_chart(real_run, tmp_path):
    dom_text, _ = chromium_dom(real_run / "report.html", tmp_path / "profile")
    ids = re.findall(r'data-chart="([^"]+)"', dom_text)
    assert len(ids) == 8
    for cid in ids:
        assert (real_run / "figures" / f"{cid}.png").stat().st_size > 1000
        assert (real_run / "figures" / f"{cid}.svg").read_text().lstrip().startswith("<?xml")
        assert (real_run / "tables" / f"{cid}.csv").stat().st_size > 0
    assert (real_run / "report.md").read_text().startswith("# protolab: browser — run ")


def test_page_reports_its_own_script_errors(real_run, tmp_path):
    """The error hook works: a page whose drawing code throws shows the banner and counts the error."""
    broken = tmp_path / "broken.html"
    broken.write_text((real_run / "report.html").read_text().replace(
        "window.protolabDrawAll = function () {", "window.protolabDrawAll = function () { noSuchFunction();", 1))
    dom_text, log = chromium_dom(broken, tmp_path / "profile")
    dom = Dom()
    dom.feed(dom_text)
    assert dom.root_attrs.get("data-errors") == "1"
    assert "noSuchFunction is not defined" in dom_text
    assert any("Uncaught ReferenceError" in line for line in log.splitlines())
