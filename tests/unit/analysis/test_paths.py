"""Multipath: a cell's share of bytes per storage port, from its records' interface counters, in the summary table
of report.md and report.html and in cells.csv."""

from __future__ import annotations

import csv

import pytest

from protolab.analysis.paths import path_share
from protolab.report.markdown import summary_table
from protolab.report.tables import build
from protolab.results.manifest import Manifest
from protolab.results.records import CellRecord, CellResult, DirectionResult, Telemetry, Traffic
from protolab.results.rundir import cell_row, csv_columns

PORTS = [f"st/p{i}" for i in range(4)]


def _rec(seq: int, config: str, repeat: int, port_bytes: list[int]) -> CellRecord:
    """A window of 20,000 I/Os whose storage ports carried ``port_bytes`` (rx and tx split evenly)."""
    d = DirectionResult(ios=20000, iops=10000.0, bins_ns={100000: 10})
    res = CellResult(iops=10000.0, mbps=41.0, read=d, write=DirectionResult(), lat_mean_us=100.0,
                     percentiles_us={"p99": 300.0}, jobs=4, runtime_s=2.0, errors=0)
    ifaces = {p: Traffic(rx_bytes=n // 2, tx_bytes=n - n // 2, rx_packets=n // 1500, tx_packets=n // 1500)
              for p, n in zip(PORTS, port_bytes)}
    tel = Telemetry(elapsed_s=2.0, machine_busy_s=1.0, machine_total_s=4.0, interfaces=ifaces,
                    offloads={p: False for p in PORTS}, storage_ports=PORTS)
    return CellRecord(run_id="r", seq=seq, cell_id=f"w__{config}__0__r{repeat}", workload="w", configuration=config,
                      baseline=config == "one", load_index=0, hosts=1, streams_per_host=4, oio_per_stream=4,
                      total_oio=16, repeat=repeat, started="", ended="", result=res, telemetry=tel,
                      raw_output="", job_file="")


def test_an_even_split_over_four_ports():
    recs = [_rec(k, "rr", k, [1_000_000] * 4) for k in (1, 2, 3)]
    p = path_share(recs)
    assert p is not None and p.ports == tuple(PORTS) and p.shares == pytest.approx((0.25,) * 4)
    assert p.label() == "4 paths: 25/25/25/25 % of bytes"


def test_an_uneven_split_pools_the_repeats_bytes():
    # repeat 1: 60/20/20/0, repeat 2: 20/60/20/0 (as bytes of equal totals): pooled 40/40/20, port 3 no path
    recs = [_rec(1, "rr", 1, [600, 200, 200, 0]), _rec(2, "rr", 2, [200, 600, 200, 0])]
    p = path_share(recs)
    assert p is not None and p.paths == 3 and p.of_ports == 4 and p.ports == tuple(PORTS[:3])
    assert p.shares == pytest.approx((0.4, 0.4, 0.2))
    assert p.label() == "3 paths: 40/40/20 % of bytes"


def test_one_port_and_no_traffic():
    one = path_share([_rec(1, "one", 1, [5000, 0, 0, 0])])
    assert one is not None and one.paths == 1 and one.label() == "1 path (1 of 4 ports)"
    assert path_share([_rec(1, "local", 1, [0, 0, 0, 0])]) is None and path_share([]) is None


def test_the_summary_table_shows_the_split_only_where_a_configuration_used_several_paths():
    recs, seq = [], 0
    for k in (1, 2, 3):
        for config, split in (("one", [4000, 0, 0, 0]), ("rr", [1000, 1000, 1000, 1000]),
                              ("skewed", [2500, 500, 500, 500])):
            seq += 1
            recs.append(_rec(seq, config, k, split))
    data = build(Manifest(run_id="r"), recs)
    _, headers, rows = summary_table(data, "w")
    assert headers[-1] == "paths"
    assert {r[1].rstrip(" *"): r[-1] for r in rows} == {
        "one": "1 path (1 of 4 ports)", "rr": "4 paths: 25/25/25/25 % of bytes",
        "skewed": "4 paths: 62/12/12/12 % of bytes"}
    single = build(Manifest(run_id="r"), [r for r in recs if r.configuration == "one"])
    assert "paths" not in summary_table(single, "w")[1]  # no configuration spread its traffic: no column
    # cells.csv: each window's share per port, in port order (% of its bytes on the storage ports)
    from protolab.analysis.derived import figures

    row = cell_row(recs[2], figures(recs[2]).csv_fields())
    assert "share_by_port" in csv_columns() and row["share_by_port"] == "62.5/12.5/12.5/12.5"
    assert cell_row(recs[0], figures(recs[0]).csv_fields())["share_by_port"] == "100.0/0.0/0.0/0.0"


def test_the_stored_exchange_run_shows_its_four_paths(tmp_path):
    import shutil

    from conftest import DATA
    from protolab.report.report_cli import write_report
    from protolab.results.rundir import RunDir

    run = tmp_path / "exchange"
    shutil.copytree(DATA / "golden" / "exchange-quick" / "run", run)
    write_report(RunDir.open(run), figures=False)
    md, page = (run / "report.md").read_text(), (run / "report.html").read_text()
    # the 4 × 1GbE configuration, per workload (its three repeats pooled)
    assert "| 4 paths: 25/24/26/25 % of bytes |" in md and "| 4 paths: 24/25/24/27 % of bytes |" in md
    assert md.count("| 1 path (1 of 4 ports) |") == 4  # iscsi-1x1g and nfs-1x1g on both workloads
    assert "<td>4 paths: 25/24/26/25 % of bytes</td>" in page
    with open(run / "cells.csv") as f:
        shares = {r["share_by_port"] for r in csv.DictReader(f) if r["configuration"] == "iscsi-4x1g"}
    assert len(shares) == 6 and all(len(s.split("/")) == 4 for s in shares)
