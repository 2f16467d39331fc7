"""Run directories made by hand for the catalogue's tests: a small lab plan stored as `protolab run` stores it, and
records with chosen IOPS per configuration, without fio or a lab."""

from __future__ import annotations

import numpy as np

from protolab.plan.load import load_plan_text
from protolab.plan.migrate import PLAN_FORMAT
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import CellRecord, CellResult, DirectionResult, Telemetry
from protolab.results.rundir import RunDir

PLAN = """
name = "{name}"
baseline = "direct"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 1, oio = 4 }}, {{ streams = 2, oio = 4 }}]
[method]
repeats = 4
[lab]
prefix = "pfr"
link = {{ rate = "{rate}", mtu = 9000 }}
[lab.storage]
model = "hdd-array"
[[configurations]]
name = "direct"
target = "lab:local"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
"""


def make_run(root, *, name: str = "nightly", iops: dict[str, float] | None = None, repeats: int = 4,
             fio: str = "fio-3.33", kernel: str = "6.1", device_model: str | None = None, seed: int = 0,
             spread: float = 0.005, link: str = "1GbE", cpu_us: dict[str, float] | None = None) -> RunDir:
    """A complete run of plan ``name`` under ``root``: each configuration at ``iops[configuration]`` × (load point
    + 1) IOPS (±``spread``, normal), latency inverse to IOPS, ``repeats`` repeats, the lab's link at ``link``;
    with ``cpu_us`` ({"servers": µs, "loadgen": µs, "machine": µs} per I/O) each window's telemetry: its role cgroups'
    CPU and the machine's busy CPU (all work on it) at those figures (±``spread``) over 2 cores."""
    iops = iops or {"direct": 1000.0, "iscsi": 800.0}
    text = PLAN.format(name=name, rate=link)
    plan = load_plan_text(text, device_model=device_model)
    rd = RunDir.create(root, name, RunStart(plan=plan.model_dump(mode="json"), plan_text=text,
                                            plan_format=PLAN_FORMAT,
                                            provenance=Provenance(protolab="0.1.0", kernel=kernel, fio_version=fio),
                                            testbed={"kind": "lab", "hosts": 1}))
    rng = np.random.default_rng(seed)
    seq, records = 0, []
    for load in (0, 1):
        for rep in range(1, repeats + 1):
            for config, base in iops.items():
                seq += 1
                value = base * (load + 1) * (1 + rng.normal(0, spread))
                d = DirectionResult(ios=int(value * 2), iops=value)
                res = CellResult(iops=value, mbps=value * 4096 / 1e6, read=d, write=DirectionResult(),
                                 lat_mean_us=4e6 / value, percentiles_us={"p99": 9e6 / value}, jobs=load + 1,
                                 runtime_s=2.0, errors=0)
                tel = None
                if cpu_us is not None:  # drawn only then: the other runs' values stay what they were
                    s = d.ios * (1 + rng.normal(0, spread)) / 1e6
                    tel = Telemetry(elapsed_s=2.0, machine_busy_s=cpu_us["machine"] * s, machine_total_s=4.0,
                                    roles_cpu_s={r: cpu_us[r] * s for r in ("servers", "loadgen")},
                                    servers_cpu_s={"server": cpu_us["servers"] * s})
                records.append(CellRecord(
                    run_id=rd.run_id, seq=seq, cell_id=f"tr3808-4k__{config}__{load}__r{rep}", workload="tr3808-4k",
                    configuration=config, baseline=config == "direct", load_index=load, hosts=1,
                    streams_per_host=load + 1, oio_per_stream=4, total_oio=4 * (load + 1), repeat=rep, started="",
                    ended="", result=res, raw_output="", job_file="", telemetry=tel))
    rd.add_records(records)
    rd.events.session_ended(0, "complete")
    return rd
