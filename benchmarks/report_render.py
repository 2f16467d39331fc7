"""Benchmark: how long the report of a full-size study takes to render (a benchmark, not a timed test).

Study: 7 configurations × 2 workloads × 3 load points × 3 repeats = 126 measured windows,
with telemetry (CPU and packets per I/O, 30 s per-second series) and an embedded-lab link,
so that every section of the report is drawn. The budget is 10 s for `write_report`.

    .venv/bin/python benchmarks/report_render.py [--rounds 3]

Prints each phase's time and the ratios side by side: render time / 10 s budget, and
write_report with figures / without figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from protolab.report import figures, html, markdown, tables
from protolab.report.commands import write_report
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.results.rundir import RunDir

BUDGET_S = 10.0
CONFIGS = [("iscsi-1500", "lab:iscsi", {}), ("iscsi-9000", "lab:iscsi", {"mtu": 9000}),
           ("nfs-1500", "lab:nfs", {}), ("nfs-9000", "lab:nfs", {"mtu": 9000}),
           ("nbd-1500", "lab:nbd", {}), ("nbd-9000", "lab:nbd", {"mtu": 9000}), ("local", "/dev/null", {})]
WORKLOADS = [{"name": "tr3808-4k", "block_size": 4096, "read_pct": 75, "random_pct": 100, "oio": 4},
             {"name": "tr3808-8k", "block_size": 8192, "read_pct": 75, "random_pct": 100, "oio": 4}]
LOADS = [{"streams": 4}, {"streams": 12}, {"streams": 20}]
REPEATS = 3
SECONDS = 30


def make_run(root: Path) -> RunDir:
    """A run directory holding the synthetic study's 126 records."""
    plan = {"name": "bench", "description": "synthetic 7×2×3×3", "baseline": CONFIGS[0][0], "workloads": WORKLOADS,
            "configurations": [{"name": n, "target": t, "link": link} for n, t, link in CONFIGS],
            "load_points": LOADS, "method": {"warmup": "5m", "duration": "5m", "repeats": REPEATS},
            "lab": {"link": {"rate": "10GbE", "mtu": 1500}}}
    rd = RunDir.create(root, "bench", {"plan": plan, "plan_text": "", "status": "complete",
                                       "provenance": {"protolab": "0.1.0", "kernel": "6.1", "fio_version": "fio-3.33"}})
    rng = np.random.default_rng(0)
    seq = 0
    records = []
    for w in WORKLOADS:
        for li, lp in enumerate(LOADS):
            for rep in range(1, REPEATS + 1):
                for ci, (name, _, _) in enumerate(CONFIGS):
                    seq += 1
                    oio = 4 * lp["streams"]
                    iops = float(rng.normal(20000 * (1 + 0.03 * ci) * (1 + li * 0.5), 300))
                    lat = 1e6 * oio / iops
                    bins = {int(lat * 1000 * f): int(c) for f, c in
                            zip(np.geomspace(0.3, 20, 60), rng.integers(1, 5000, 60))}
                    series = [float(v) for v in rng.normal(iops, iops * 0.02, SECONDS)]
                    extra = {"cpu_us_per_io_loadgen": float(rng.normal(6 + ci * 0.3, 0.1)),
                             "cpu_us_per_io_server": float(rng.normal(9 - ci * 0.2, 0.1)),
                             "cpu_us_per_io_total": float(rng.normal(16, 0.2)),
                             "packets_per_io": 3.0 + (ci % 2) * 0.5, "wire_bytes_per_io": 4400.0 + ci,
                             "iops_series": series, "steady": {"steady": True}}
                    d = DirectionResult(ios=int(iops * 300), iops=iops, bins_ns=bins)
                    res = CellResult(iops=iops, mbps=iops * w["block_size"] / 1e6, read=d, write=DirectionResult(),
                                     lat_mean_us=lat, percentiles_us={"p99": lat * 4}, jobs=lp["streams"],
                                     runtime_s=300.0, errors=0, extra=extra)
                    records.append(CellRecord(
                        run_id=rd.run_id, seq=seq, cell_id=f"{w['name']}__{name}__{li}__r{rep}", workload=w["name"],
                        configuration=name, baseline=ci == 0, load_index=li, hosts=1,
                        streams_per_host=lp["streams"], oio_per_stream=4, total_oio=oio, repeat=rep, started="",
                        ended="", result=res, raw_output="", job_file=""))
    for rec in records[:-1]:  # add_record rewrites cells.csv each time; store the rest directly, then once
        from protolab.results.rundir import write_json
        write_json(rd.path / "records" / f"{rec.cell_id}.json", rec.model_dump(mode="json"))
    rd.add_record(records[-1])
    return rd


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


def main(argv: list[str]) -> int:
    """Run the benchmark and print the measured times and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="repeat each measurement this many times (median shown)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rd = make_run(Path(tmp))
        records, manifest = rd.records(), rd.manifest()
        phases: dict[str, list[float]] = {k: [] for k in
                                          ("build (stats, findings)", "HTML", "figures PNG+SVG", "CSV + Markdown",
                                           "write_report, with figures", "write_report, without figures")}
        n_charts = 0
        for _ in range(args.rounds):
            t, data = timed(tables.build, manifest, records)
            phases["build (stats, findings)"].append(t)
            n_charts = len(data.charts)
            phases["HTML"].append(timed(html.render, data)[0])
            phases["figures PNG+SVG"].append(timed(figures.save_all, data.charts, Path(tmp) / "figs")[0])
            t1, _ = timed(tables.write_csvs, data, Path(tmp) / "tables")
            t2, _ = timed(markdown.report_markdown, data)
            phases["CSV + Markdown"].append(t1 + t2)
            phases["write_report, with figures"].append(timed(write_report, rd)[0])
            phases["write_report, without figures"].append(timed(write_report, rd, figures=False)[0])
        med = {k: statistics.median(v) for k, v in phases.items()}
        size = (rd.path / "report.html").stat().st_size
    print(f"study: {len(CONFIGS)} configurations × {len(WORKLOADS)} workloads × {len(LOADS)} load points × "
          f"{REPEATS} repeats = {len(records)} windows; {n_charts} charts; report.html {size / 1024:.0f} KiB; "
          f"median of {args.rounds} rounds")
    for k, v in med.items():
        print(f"  {k:<32} {v:6.2f} s")
    full, bare = med["write_report, with figures"], med["write_report, without figures"]
    print(f"ratios: render / {BUDGET_S:.0f} s budget = {full / BUDGET_S:.2f}  |  "
          f"with figures / without figures = {full / bare:.1f}×  |  figures share of render = "
          f"{med['figures PNG+SVG'] / full:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
