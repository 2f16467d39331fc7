"""The report's wire-ceiling table sets each load point's measured frames beside the model's for that load point's
I/Os in flight per stream (analysis.wire_tcp: Linux's pure ACKs depend on them)."""

import pytest

from protolab.analysis.wire import ceiling, wire_cost
from protolab.plan.load import load_plan_text
from protolab.report.tables import build
from protolab.results.manifest import Manifest
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.results.synthetic import telemetry_for

PLAN = """name = "acks"
baseline = "iscsi"
[[workloads]]
name = "r8k"
block_size = 8192
read_pct = 100
random_pct = 100
oio = 1
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[lab.link]
rate = "1GbE"
mtu = 1500
offloads = false
[[load_points]]
streams = 1
oio = 1
[[load_points]]
streams = 2
oio = 8
"""


def _rec(seq: int, load: int, streams: int, oio: int, frames: float) -> CellRecord:
    d = DirectionResult(ios=20000, iops=10000.0, bins_ns={100000: 10})
    res = CellResult(iops=10000.0, mbps=81.9, read=d, write=DirectionResult(), lat_mean_us=100.0,
                     percentiles_us={"p99": 300.0}, jobs=streams, runtime_s=2.0, errors=0)
    tel = telemetry_for(20000, packets_per_io=frames, wire_bytes_per_io=8900.0)
    return CellRecord(run_id="r", seq=seq, cell_id=f"r8k__iscsi__{load}__r1", workload="r8k", configuration="iscsi",
                      baseline=True, load_index=load, hosts=1, streams_per_host=streams,
                      oio_per_stream=oio, total_oio=streams * oio, repeat=1, started="", ended="", result=res,
                      telemetry=tel, raw_output="", job_file="")


def test_the_model_column_follows_each_load_points_ios_in_flight():
    """8 KiB iSCSI reads at MTU 1500: one I/O in flight, 1 command + 6 data frames + 1 + 4/220 pure ACKs = 8.02;
    8 in flight per stream, 7 + 0.06 + 0.55 + 4/45 = 7.70 (the 2 × 8 OIO the issue captured)."""
    plan = load_plan_text(PLAN)
    manifest = Manifest(run_id="r", plan=plan.model_dump(mode="json"))
    data = build(manifest, [_rec(1, 0, 1, 1, 8.0), _rec(2, 1, 2, 8, 7.6)])
    [chart] = [c for c in data.charts if c.id == "ceiling-r8k"]
    rows = {r["load point"]: r for r in chart.table}
    one, deep = rows["1×1×1=1"], rows["1×2×8=16"]
    assert one["frames/I/O measured"] == pytest.approx(8.0) and deep["frames/I/O measured"] == pytest.approx(7.6)
    assert one["frames/I/O model"] == pytest.approx(7 + 1 + 4 / 220)
    assert deep["frames/I/O model"] == pytest.approx(7 + 0.06 + 0.55 + 4 / 45)
    assert deep["frames/I/O model"] == wire_cost("iscsi", block_size=8192, read_pct=100, mtu=1500, oio=8).frames
    # the ceiling moves with the pure ACKs' bytes too: to host, 0.06 ACK of 90 B more per I/O with 8 in flight
    assert deep["ceiling IOPS"] == pytest.approx(ceiling("iscsi", link_bps="1GbE", mtu=1500, block_size=8192,
                                                         read_pct=100, oio=8).iops)
    assert deep["ceiling IOPS"] < one["ceiling IOPS"]
