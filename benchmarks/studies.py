"""Benchmark: the built-in studies at quick scale, timed and checked against their own data (root, real lab).

For each study named (default: the six seed studies and kernel-paths): `protolab run --builtin NAME --scale quick`,
its wall time, then checks that every cell measured (IOPS > 0, no errors; for VM studies the hypervisor's CPU per I/O
in every row, and a virtual disk controller, or for a kernel data path the server guest's own CPU per I/O) and
that every part of every seed claim in `report --json` agrees with `cells.csv`: the change recomputed as the ratio
of the repeats' means or medians (within 1 point) and inside its interval. The README's table of quick-scale times
comes from here.

    .venv/bin/python benchmarks/studies.py [--results DIR] [NAME ...]

Prints per study one line (time, cells, claims and their verdicts, parts checked and mismatched), then its claims
as a table: claim (the seed's section and the claim as tested), verdict, figure, MDD (the smallest difference the
claim's tests could have called, 80 % power; the range over its parts). Exit 1 when a check fails. A study takes
3.5-8 min on a 2-core machine; tests run the VM mechanics on a smaller plan.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protolab.plan.coordinates import load_label

STUDIES = ["tr3808", "tr3916-shared", "tr3916-vm", "exchange", "jumbo-vmtn", "emc-fill-aging", "kernel-paths"]


def _point(row: dict) -> str:
    return load_label(*(int(row[k]) for k in ("hosts", "streams_per_host", "oio_per_stream", "total_oio")))


def check_claims(rows: list[dict], claims: list[dict]) -> tuple[int, list[str]]:
    """(parts checked, mismatches): each claim part's change against the one recomputed from the cells."""
    checked, bad = 0, []
    for claim in claims:
        for part in claim.get("parts", []):
            metric = part["metric"]

            def values(configuration: str) -> list[float]:
                return [float(r[metric]) for r in rows if r["configuration"] == configuration
                        and r["workload"] == part["workload"] and part["point"] in ("", None, _point(r))
                        and r.get(metric) not in ("", None)]

            a, b = values(part["subject"]), values(part["reference"])
            if not a or not b or part.get("change_pct") is None or not all(b):
                continue
            means = (statistics.mean(a) / statistics.mean(b) - 1) * 100
            medians = (statistics.median(a) / statistics.median(b) - 1) * 100
            agrees = min(abs(means - part["change_pct"]), abs(medians - part["change_pct"])) < 1.0
            inside = part["low_pct"] is None or part["low_pct"] - 1e-6 <= part["change_pct"] <= part["high_pct"] + 1e-6
            checked += 1
            if not (agrees and inside):
                bad.append(f"claim {claim['finding']} {part['workload']} {part['point']} {part['subject']} vs "
                           f"{part['reference']} {metric}: report {part['change_pct']:.2f} % "
                           f"[{part['low_pct']}, {part['high_pct']}], cells {means:.2f} / {medians:.2f} %")
    return checked, bad


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def claims_table(claims: list[dict]) -> str:
    """A study's claims (`report --json`'s) as a Markdown table: claim, verdict, figure, MDD."""
    lines = ["| claim | verdict | figure | MDD |", "|---|---|---|---|"]
    for c in claims:
        what = c["claim"] if c["claim"] != "—" else c["said"]  # an untestable finding: the seed's words
        where = f"{c['section']}: " if c.get("section") else ""
        figure = "; ".join(x for x in (c["figures"], c.get("decide") or "") if x)
        lo, hi = c.get("mdd_pct") or (None, None)
        mdd = "" if lo is None else f"{lo:.1f} %" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f} %"
        lines.append(f"| {c['finding']}. {_cell(where + what)} | {c['verdict']} | {_cell(figure)} | {mdd} |")
    return "\n".join(lines)


def claims_of(run: Path) -> list[dict]:
    """A stored run's seed-claim verdicts, as `report --json` gives them (computed here; nothing is written)."""
    from protolab.report.report_cli import report_json
    from protolab.results.rundir import RunDir

    return report_json(RunDir.open(run, write=False), run / "report.html").get("claims", [])


def run_study(name: str, results: Path) -> tuple[bool, str]:
    """Run one study; (all checks held, its line)."""
    before = set(results.iterdir()) if results.exists() else set()
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", "--builtin", name, "--scale", "quick",
                        "--results", str(results)], capture_output=True, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        return False, f"{name}: exit {p.returncode} after {took:.0f} s: {p.stderr.strip().splitlines()[-1:]}"
    [run] = sorted(set(results.iterdir()) - before)
    rows = list(csv.DictReader((run / "cells.csv").open()))
    problems = [f"cell {r['seq']} ({r['workload']}, {r['configuration']}): IOPS {r['iops']}, errors {r['errors']}"
                for r in rows if not float(r["iops"]) > 0 or r["errors"] != "0"]
    if any(r.get("cpu_us_per_io_hypervisor") for r in rows):  # a VM study: QEMU's disk or the guest's kernel
        problems += [f"cell {r['seq']} ({r['configuration']}): no controller (or server guest CPU) or hypervisor CPU"
                     for r in rows if not (r["controller"] or r.get("cpu_us_per_io_server_guest"))
                     or not r.get("cpu_us_per_io_hypervisor")]
    report = subprocess.run([sys.executable, "-m", "protolab.cli", "report", str(run), "--json"],
                            capture_output=True, text=True)
    claims = json.loads(report.stdout).get("claims", []) if report.returncode == 0 else []
    checked, bad = check_claims(rows, claims)
    verdicts = "; ".join(f"{c['finding']}: {c['verdict']}" for c in claims) or "no claims"
    line = (f"{name}: {took / 60:.0f} min {took % 60:02.0f} s, {len(rows)} cells, claims ({verdicts}), "
            f"{checked} parts checked against cells.csv, {len(bad)} mismatched — {run}")
    table = claims_table(claims) if claims else ""
    return not (problems or bad or report.returncode), "\n  ".join([line, *problems, *bad]) + \
        (f"\n\n{table}\n" if table else "")


def main(argv: list[str]) -> int:
    """Run the studies named (all by default) and print a line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=STUDIES, help=f"built-in studies (default: {' '.join(STUDIES)})")
    ap.add_argument("--results", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = ap.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="protolab-studies-") as tmp:
        results = args.results or Path(tmp)
        for name in args.names:
            good, line = run_study(name, results)
            ok &= good
            print(line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
