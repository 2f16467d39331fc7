"""No empty chart: a metric the baseline lacks (a direct path has no server) is drawn against a named reference."""

from protolab.report.tables import build
from protolab.results.manifest import Manifest
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.results.synthetic import telemetry_for


def _rec(seq, config, repeat, server_us):
    d = DirectionResult(ios=20000, iops=10000.0, bins_ns={100000: 10})
    res = CellResult(iops=10000.0, mbps=41.0, read=d, write=DirectionResult(), lat_mean_us=100.0,
                     percentiles_us={"p99": 300.0}, jobs=1, runtime_s=2.0, errors=0)
    tel = telemetry_for(20000, cpu_us_per_io_server=server_us, cpu_us_per_io_loadgen=5.0)
    return CellRecord(run_id="r", seq=seq, cell_id=f"w__{config}__0__r{repeat}", workload="w", configuration=config,
                      baseline=config == "local", load_index=0, hosts=1, streams_per_host=1, oio_per_stream=4,
                      total_oio=4, repeat=repeat, started="", ended="", result=res, telemetry=tel,
                      raw_output="", job_file="")


def test_server_cpu_is_drawn_against_the_first_configuration_that_has_it():
    recs, seq = [], 0
    for k in range(1, 4):
        for config, server in (("local", None), ("iscsi", 20.0), ("nbd", 10.0)):
            seq += 1
            recs.append(_rec(seq, config, k, server))
    data = build(Manifest(run_id="r"), recs)
    chart = next(c for c in data.charts if c.id == "cpu_us_per_io_server-w")
    assert chart.ylabel == "% of iscsi" and "local has no server CPU per I/O: iscsi = 100 instead" in chart.note
    values = {s.name: s.values[0] for s in chart.series}
    assert values == {"local": None, "iscsi": 100.0, "nbd": 50.0}
    iops = next(c for c in data.charts if c.id == "iops-w")
    assert iops.ylabel == "% of local"  # metrics the baseline has keep it
