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

from protolab.plan.migrate import PLAN_FORMAT
from protolab.report import drawer, html, sections, tables
from protolab.report.report_cli import write_report
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import CellRecord, CellResult, DirectionResult, SeriesRow, Steadiness
from protolab.results.rundir import RunDir
from protolab.results.synthetic import telemetry_for

BUDGET_S = 10.0
CONFIGS = [("iscsi-1500", "lab:iscsi", {}), ("iscsi-9000", "lab:iscsi", {"mtu": 9000}),
           ("nfs-1500", "lab:nfs", {}), ("nfs-9000", "lab:nfs", {"mtu": 9000}),
           ("nbd-1500", "lab:nbd", {}), ("nbd-9000", "lab:nbd", {"mtu": 9000}), ("local", "/dev/null", {})]
WORKLOADS = [{"name": "tr3808-4k", "block_size": 4096, "read_pct": 75, "random_pct": 100, "oio": 4},
             {"name": "tr3808-8k", "block_size": 8192, "read_pct": 75, "random_pct": 100, "oio": 4}]
LOADS = [{"streams": 4}, {"streams": 12}, {"streams": 20}]
REPEATS = 3
SECONDS = 30


def make_run(root: Path, windows: int = 0) -> RunDir:
    """A run directory holding the synthetic study (through protolab's own store, schema 2).

    ``windows`` > 0 grows the load ladder until the study has about that many windows (7 configurations ×
    2 workloads × 3 repeats per load point).
    """
    loads = LOADS if windows <= 0 else [{"streams": 4 + i} for i in range(max(1, round(windows / (7 * 2 * 3))))]
    plan = {"name": "bench", "description": "synthetic study", "baseline": CONFIGS[0][0], "workloads": WORKLOADS,
            "configurations": [{"name": n, "target": t, "link": link} for n, t, link in CONFIGS],
            "load_points": loads, "method": {"warmup": "5m", "duration": "5m", "repeats": REPEATS},
            "lab": {"link": {"rate": "10GbE", "mtu": 1500}}}
    rd = RunDir.create(root, "bench", RunStart(
        plan=plan, plan_text="", plan_format=PLAN_FORMAT,
        provenance=Provenance(protolab="0.1.0", kernel="6.1", fio_version="fio-3.33")))
    rd.events.session_ended(0, "complete")
    rng = np.random.default_rng(0)
    seq = 0
    records, series = [], []  # stored in batches: add_records writes the same files as add_record one by one
    for w in WORKLOADS:
        for li, lp in enumerate(loads):
            for rep in range(1, REPEATS + 1):
                for ci, (name, _, _) in enumerate(CONFIGS):
                    seq += 1
                    oio = 4 * lp["streams"]
                    iops = float(rng.normal(20000 * (1 + 0.03 * ci) * (1 + li * 0.5), 300))
                    lat = 1e6 * oio / iops
                    bins = {int(lat * 1000 * f): int(c) for f, c in
                            zip(np.geomspace(0.3, 20, 60), rng.integers(1, 5000, 60))}
                    ios = int(iops * 300)
                    tel = telemetry_for(ios, cpu_us_per_io_loadgen=float(rng.normal(6 + ci * 0.3, 0.1)),
                                        cpu_us_per_io_server=float(rng.normal(9 - ci * 0.2, 0.1)),
                                        cpu_us_per_io_total=float(rng.normal(16, 0.2)),
                                        packets_per_io=3.0 + (ci % 2) * 0.5, wire_bytes_per_io=4400.0 + ci,
                                        window_s=300.0)
                    d = DirectionResult(ios=ios, iops=iops, bins_ns=bins)
                    res = CellResult(iops=iops, mbps=iops * w["block_size"] / 1e6, read=d, write=DirectionResult(),
                                     lat_mean_us=lat, percentiles_us={"p99": lat * 4}, jobs=lp["streams"],
                                     runtime_s=300.0, errors=0)
                    cell_id = f"{w['name']}__{name}__{li}__r{rep}"
                    series += [SeriesRow(seq=seq, cell_id=cell_id, phase="measure", host="all", t_s=i + 1.0,
                                         iops=float(v)) for i, v in enumerate(rng.normal(iops, iops * 0.02, SECONDS))]
                    records.append(CellRecord(
                        run_id=rd.run_id, seq=seq, cell_id=cell_id, workload=w["name"], configuration=name,
                        baseline=ci == 0, load_index=li, hosts=1, streams_per_host=lp["streams"], oio_per_stream=4,
                        total_oio=oio, repeat=rep, started="", ended="", result=res, telemetry=tel,
                        steady=Steadiness(steady=True, range_pct=5.0, excursion_pct=2.0, window_start=0, window=5,
                                          reason="steady"), raw_output="", job_file=""))
                    if len(records) == 500:
                        rd.add_series(series)
                        rd.add_records(records)
                        records, series = [], []
    rd.add_series(series)
    rd.add_records(records)
    return rd


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


def whole_process(out: Path, windows: int) -> int:
    """Write the run directory under ``out``, then time `protolab report DIR` (wall time and peak RSS)."""
    import resource
    import subprocess

    t0 = time.perf_counter()
    rd = make_run(out, windows)
    made = time.perf_counter() - t0
    n = len(rd.records())
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "report", str(rd.path)], capture_output=True, text=True)
    took = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return 1
    print(f"{n} windows written to {rd.path} in {made:.1f} s; 'protolab report {rd.path}': {took:.1f} s, "
          f"peak RSS {rss:.0f} MiB (goal 5 s, 400 MiB; tests/e2e/test_report_memory.py fails above 500 MiB)")
    return 0


def main(argv: list[str]) -> int:
    """Run the benchmark and print the measured times and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="repeat each measurement this many times (median shown)")
    ap.add_argument("--windows", type=int, default=0, help="grow the study to about this many windows")
    ap.add_argument("--out", type=Path, default=None, help="write the synthetic run directory here and time "
                    "'protolab report DIR' as a whole process (re-time it yourself with the same command)")
    args = ap.parse_args(argv)
    if args.out is not None:
        return whole_process(args.out, args.windows)
    with tempfile.TemporaryDirectory() as tmp:
        rd = make_run(Path(tmp), args.windows)
        records, manifest = rd.records(), rd.manifest()
        phases: dict[str, list[float]] = {k: [] for k in
                                          ("build (stats, findings)", "HTML", "figures PNG+SVG", "CSV + Markdown",
                                           "write_report, with figures", "write_report, without figures")}
        n_charts = 0
        for _ in range(args.rounds):
            t, data = timed(tables.build, manifest, records, series=rd.series())
            phases["build (stats, findings)"].append(t)
            n_charts = len(data.charts)
            phases["HTML"].append(timed(html.render, data)[0])
            phases["figures PNG+SVG"].append(timed(drawer.save_all, data.charts, Path(tmp) / "figs")[0])
            t1, _ = timed(tables.write_csvs, data, Path(tmp) / "tables")
            t2, _ = timed(sections.report_markdown, data)
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
