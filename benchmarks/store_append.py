#!/usr/bin/env python3
"""The run directory's cost per stored cell at 100, 1,000 and 10,000 records (schema 2: append-only).

    .venv/bin/python benchmarks/store_append.py [--records 10000] [--dir DIR]

Each cell a run stores costs one record line (records.jsonl), its series rows
(series.csv), one cells.csv row, and a manifest update. The script stores
synthetic records of a realistic size (a merged latency histogram of ~60 bins,
telemetry of 4 interfaces, 10 per-second samples) and prints the median time per
cell over the 50 cells before each mark: if the store grows linearly, the three
figures are the same.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from protolab.plan.migrate import PLAN_FORMAT  # noqa: E402
from protolab.results.manifest import Provenance, RunStart  # noqa: E402
from protolab.results.records import CellRecord, CellResult, DirectionResult, SeriesRow  # noqa: E402
from protolab.results.rundir import RunDir  # noqa: E402
from protolab.results.synthetic import telemetry_for  # noqa: E402


def record(run_id: str, seq: int) -> CellRecord:
    bins = {int(1000 * 1.1 ** i): 100 + i for i in range(60)}
    d = DirectionResult(ios=20000, bytes=20000 * 4096, iops=10000.0 + seq % 7, mbps=41.0, lat_mean_us=100.0,
                        percentiles_us={"p50": 90.0, "p99": 300.0}, bins_ns=bins)
    res = CellResult(iops=d.iops, mbps=d.mbps, read=d, write=DirectionResult(), lat_mean_us=100.0,
                     percentiles_us={"p50": 90.0, "p99": 300.0}, jobs=4, runtime_s=2.0, errors=0,
                     per_host_iops={"h1": d.iops}, per_host_cpu_s={"h1": 0.5})
    tel = telemetry_for(20000, cpu_us_per_io_server=8.0, cpu_us_per_io_loadgen=5.0, packets_per_io=3.0,
                        wire_bytes_per_io=4500.0)
    return CellRecord(run_id=run_id, seq=seq, cell_id=f"w__c{seq % 7}__h1s{seq}q4__r1", workload="w",
                      configuration=f"c{seq % 7}", baseline=seq % 7 == 0, load_index=seq // 7, hosts=1,
                      streams_per_host=1, oio_per_stream=4, total_oio=4, repeat=1, started="", ended="",
                      result=res, telemetry=tel, raw_output="raw/x.json", job_file="raw/x.fio")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--dir", type=Path, default=None, help="where the run directory goes (default: a temp dir)")
    args = ap.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="protolab-store-"))
    rd = RunDir.create(root, "store-bench", RunStart(plan_text="x" * 4000, plan={"name": "store-bench"},
                                                     plan_format=PLAN_FORMAT, provenance=Provenance()))
    marks = [m for m in (100, 1000, 10000, args.records) if m <= args.records]
    times: list[float] = []
    from protolab.analysis.derived import figures

    for seq in range(1, args.records + 1):
        rec = record(rd.run_id, seq)
        rows = [SeriesRow(seq=seq, cell_id=rec.cell_id, phase="measure", host="all", t_s=i + 1.0, iops=rec.result.iops)
                for i in range(10)]
        t0 = time.perf_counter()
        rd.add_series(rows)
        rd.add_record(rec, figures(rec).csv_fields())
        times.append(time.perf_counter() - t0)
    print(f"store: time per stored cell (record + 10 series rows + cells.csv row + manifest), median of the "
          f"50 cells before each mark; run directory {rd.path}")
    for m in sorted(set(marks)):
        window = times[max(0, m - 50):m]
        print(f"  at record {m:>6}: {statistics.median(window) * 1e3:.2f} ms")
    first, last = statistics.median(times[50:100]), statistics.median(times[-50:])
    print(f"  ratio last/first: {last / first:.2f} (1.00 = linear store)")


if __name__ == "__main__":
    main()
