"""`protolab compare` on real runs: prints and writes the relative table; refuses mismatched plans."""

import csv
import math
import os
import re
import subprocess
import sys

import pytest

from conftest import shared_plan

PROTOLAB = [sys.executable, "-m", "protolab.cli"]

TWO_POINTS = "[{ streams = 1, oio = 1 }, { streams = 2, oio = 4 }]"
ONE_POINT = "[{ streams = 1, oio = 1 }]"

pytestmark = pytest.mark.slow


def protolab(*args, cwd):
    return subprocess.run([*PROTOLAB, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(sys.path),
                               **({"PROTOLAB_FIO": os.environ["PROTOLAB_FIO"]} if "PROTOLAB_FIO" in os.environ else {})})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    out = {}
    for name, points in (("a", TWO_POINTS), ("b", TWO_POINTS), ("c", ONE_POINT)):
        plan = root / f"{name}.toml"
        plan.write_text(shared_plan("psync-io_uring", name=f'"cmp-{name}"', url=f'"{root / "scratch.dat"}"',
                                    load_points=points, duration='"1s"', warmup='"0s"'))  # compare reads records, not their length
        done = protolab("run", str(plan), "--results", str(root / name), cwd=root)
        assert done.returncode == 0, done.stderr
        (out[name],) = list((root / name).iterdir())
    return root, out


def test_compare_prints_and_writes_the_relative_table(runs):
    root, r = runs
    done = protolab("compare", str(r["a"]), str(r["b"]), "--out", str(root / "ab"), cwd=root)
    assert done.returncode == 0, done.stderr
    assert "B relative to A (A = 100)" in done.stdout
    body = [l for l in done.stdout.splitlines() if l.startswith("│ tr3808-4k")]
    md = (root / "ab" / "compare.md").read_text()
    assert "| workload | load point | configuration | metric | A | B | B % of A | interval | p (corr.) | verdict |" in md
    assert "environment kernel" not in md  # same machine, same kernel
    with open(root / "ab" / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    metrics = {row["metric"] for row in rows}
    # load points × configurations × metrics (IOPS, avg, p99, load-generator CPU/I/O, and role CPU when measured)
    assert len(rows) == len(body) == 2 * 2 * len(metrics) and len(metrics) >= 4
    assert (f"0 of {len(rows)} comparisons called; 0 no clear difference; {len(rows)} not tested (fewer than 3 "
            "repeats on a side).") in done.stdout.replace("\n", " ")
    # compare.html: one chart per workload and metric, drawn by the report's renderer, every configuration's series
    page = (root / "ab" / "compare.html").read_text()
    charts = re.findall(r'data-chart="(compare-[^"]+)"', page)
    assert len(charts) == len(metrics)
    for cid in charts:
        block = page.split(f'data-chart="{cid}"')[1].split("</figure>")[0]
        assert {"psync", "io_uring"} <= set(re.findall(r'data-series="([^"]+)"', block))
        assert (root / "ab" / "figures" / f"{cid}.png").stat().st_size > 1000
    assert "not tested (fewer than 3 repeats on a side)" in page and "default-src 'none'" in page
    _fetches_nothing(page)
    _figures_match_compare_csv(root / "ab", page, charts, rows)
    for row in rows:
        # with 2 + 2 repeats nothing can be tested: the honest verdict, never "no clear difference"
        assert row["verdict"] == "not tested"
        lo, mid, hi = float(row["CI low %"]), float(row["B % of A"]), float(row["CI high %"])
        assert lo <= mid <= hi or math.isnan(lo)  # NaN: a metric whose A median is zero has no ratio
        assert (float(row["median A"]) > 0 and float(row["median B"]) > 0) or math.isnan(lo)


def _fetches_nothing(page: str) -> None:
    """compare.html is self-contained: no script, style, image or frame from anywhere, only links beside it."""
    assert not re.search(r"<(link|iframe|object|embed|img)\b", page, re.I)
    assert not re.search(r"\bsrc\s*=", page, re.I)  # every picture is inline SVG
    assert not re.search(r"url\((?!#)|@import", page, re.I)  # the SVGs' url(#clip) point inside the page
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith(("#", "figures/", "tables/", "compare.")) for h in hrefs), hrefs


def _figures_match_compare_csv(folder, page: str, charts: list[str], rows: list[dict]) -> None:
    """Each chart's table (on the page and in tables/<id>.csv) holds compare.csv's figures of its metric; the
    page's comparison table has one row per comparison."""
    from protolab.report.htmlkit import fmt_number

    for cid in charts:
        metric = cid.removeprefix("compare-").removesuffix("-tr3808-4k")
        want = [r for r in rows if r["metric"] == metric]
        with open(folder / "tables" / f"{cid}.csv") as f:
            table = list(csv.DictReader(f))
        assert len(table) == len(want) == 4  # 2 load points × 2 configurations
        cols = ("load point", "configuration", "verdict", "B % of A", "CI low %", "CI high %", "median A",
                "median B")
        assert [{c: t[c] for c in cols} for t in table] == [{c: w[c] for c in cols} for w in want]
        block = page.split(f'data-chart="{cid}"')[1].split("</table>")[0]
        cells = [re.findall(r"<td[^>]*>([^<]*)</td>", tr) for tr in block.split("<tr>")[2:]]
        assert len(cells) == 4
        for got, w in zip(cells, want):  # columns: load point, configuration, verdict, B % of A, CI low, CI high
            assert got[:3] == [w["load point"], w["configuration"], w["verdict"]]
            for shown, c in zip(got[3:6], ("B % of A", "CI low %", "CI high %")):
                assert _shows(shown, float(w[c])), (shown, c, w[c], fmt_number(float(w[c])))
    whole = page.split('<section id="table">')[1]
    assert whole.count("<tr>") == len(rows) + 1


def _shows(shown: str, value: float) -> bool:
    """The page's figure is ``value`` (from the CSV, 6 significant digits) rounded to the digits it shows: the page
    rounds the full value once, so a CSV figure on a rounding edge (101.4999996 → '101.5') may read one unit off
    when rounded again."""
    digits = shown.replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return abs(float(digits) - value) <= 0.5 * 10 ** -decimals + 1e-5 * abs(value)


def test_compare_refuses_mismatched_load_points_and_says_what_differs(runs):
    root, r = runs
    done = protolab("compare", str(r["a"]), str(r["c"]), cwd=root)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"protolab: error: compare {r['a']} {r['c']}: runs differ in load points "
                           "(A: tr3808-4k: 1×1×1=1, 1×2×4=8; B: tr3808-4k: 1×1×1=1)")
    assert line.endswith("pass --force to compare the cells they share anyway")
    forced = protolab("compare", str(r["a"]), str(r["c"]), "--force", "--out", str(root / "ac"), cwd=root)
    assert forced.returncode == 0, forced.stderr
    md = (root / "ac" / "compare.md").read_text()
    assert "Compared anyway (--force)" in md
    assert "cells only in A (left out): tr3808-4k · 1×2×4=8 · psync; tr3808-4k · 1×2×4=8 · io_uring" in md
    with open(root / "ac" / "compare.csv") as f:
        assert {row["load point"] for row in csv.DictReader(f)} == {"1×1×1=1"}


def test_compare_names_a_directory_that_is_not_a_run(runs, tmp_path):
    root, r = runs
    done = protolab("compare", str(r["a"]), str(tmp_path), cwd=root)
    assert done.returncode == 2
    assert f"{tmp_path}: not a protolab run directory" in done.stderr and "Traceback" not in done.stderr
