"""A cell on the lab's local path has no server CPU and no wire: the servers' idle CPU and the stray packets of
other paths (a VM study's idle kernel sessions) are not its figures."""

from __future__ import annotations

from protolab.analysis.derived import derive
from protolab.plan.model import Configuration
from protolab.run.labbed import LabTestbed
from protolab.run.procedure import _without_servers, window_telemetry

DELTA = {"elapsed_s": 5.0, "machine_busy_s": 4.0, "machine_total_s": 10.0, "servers_cpu_s": {"tgtd": 0.0003},
         "roles_cpu_s": {"servers": 0.000325, "loadgen": 4.4}, "roles_cpu_wait_s": {"servers": 0.0, "loadgen": 1.2},
         "server_threads": {"tgtd": {"thread": "tgtd", "cpu_s": 0.0003, "threads": 3, "live_cpu_s": 0.0003}},
         "interfaces": {}}


def test_the_local_path_reports_no_server_cpu_and_a_protocol_does():
    local = derive(10_000, 4.4, _without_servers(DELTA))
    assert local["server_cpu_s"] is None and local["cpu_us_per_io_server"] is None
    assert local["cpu_us_per_io_loadgen"] == 440.0 and "servers" not in local["role_cpu_s"]
    served = derive(10_000, 4.4, DELTA)
    assert served["cpu_us_per_io_server"] == 0.0325  # what the old record said for local: tgtd idling


def test_the_lab_says_which_configurations_its_servers_serve():
    from types import SimpleNamespace as NS

    from protolab.plan.model import TargetSpec

    # targets given inline and by name ([targets] pool = { url = "lab:local" }): the parsed target decides
    named = {"pool": TargetSpec(url="lab:local"), "export": TargetSpec(url="lab:iscsi")}
    bed = NS(plan=NS(target_of=lambda c: named.get(c.target) or TargetSpec(url=c.target)))
    serves = LabTestbed.serves
    assert serves(bed, Configuration(name="l", target="lab:local")) is False  # type: ignore[arg-type]
    assert serves(bed, Configuration(name="p", target="pool")) is False  # type: ignore[arg-type]
    assert serves(bed, Configuration(name="i", target="lab:iscsi")) is True  # type: ignore[arg-type]
    assert serves(bed, Configuration(name="e", target="export")) is True  # type: ignore[arg-type]
    assert serves(bed, Configuration(name="f", target="/tmp/x.dat")) is None  # type: ignore[arg-type]


def test_the_local_path_has_no_packets_per_io_though_other_paths_keep_alives_crossed_the_port():
    from protolab.analysis.derived import figures
    from protolab.results.records import CellRecord, CellResult, DirectionResult

    port = "st/eth0"
    delta = {**DELTA, "interfaces": {port: {"rx_packets": 6, "tx_packets": 6, "rx_bytes": 900, "tx_bytes": 900}},
             "offloads": {port: False}}

    def record(served):
        t = window_telemetry(delta, [port], served=served)
        res = CellResult(iops=2000, mbps=8, read=DirectionResult(ios=10_000, iops=2000), write=DirectionResult(),
                         lat_mean_us=500, percentiles_us={}, jobs=1, runtime_s=5, errors=0)
        return CellRecord(run_id="r", seq=1, cell_id="c", workload="w", configuration="c", baseline=True,
                          load_index=0, hosts=1, streams_per_host=1, oio_per_stream=1, total_oio=1, repeat=1,
                          started="", ended="", result=res, telemetry=t, raw_output="", job_file="")

    local = record(False)
    assert local.telemetry.storage_ports == [] and local.telemetry.interfaces[port].rx_packets == 6  # kept, raw
    assert figures(local).packets_per_io is None and figures(local).cpu_us_per_io_server is None
    assert figures(record(True)).packets_per_io == 12 / 10_000


def test_another_paths_counters_are_not_a_cells_figures():
    t = window_telemetry({**DELTA, "server_guest_cpu_s": 3.0}, [], served=True, foreign=("server_guest_cpu_s",))
    assert t.server_guest_cpu_s is None and t.servers_cpu_s == {"tgtd": 0.0003}
    assert window_telemetry({**DELTA, "server_guest_cpu_s": 3.0}, [], served=True).server_guest_cpu_s == 3.0
