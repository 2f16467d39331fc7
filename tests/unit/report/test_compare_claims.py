"""`protolab compare` of one study run over two device models: what differs names the device model, and one table
gives each seed claim's verdict in run A and in run B, computed from each run's records (compare.md, compare.html,
claims.csv, --json)."""

from __future__ import annotations

import csv
import json

import numpy as np
from typer.testing import CliRunner

from protolab.cli import app
from protolab.plan.load import load_plan_text
from protolab.plan.migrate import PLAN_FORMAT
from protolab.report.report_cli import run_compare
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import CellRecord, CellResult, DirectionResult
from protolab.results.rundir import RunDir

PLAN = """
name = "arrays"
baseline = "direct"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1, oio = 4 }, { streams = 3, oio = 4 }]
[method]
repeats = 4
[lab]
prefix = "pcc"
[lab.storage]
model = "hdd-array"
[[configurations]]
name = "direct"
target = "lab:local"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[seed_findings]]
said = "All protocols were within 9 % of FC's throughput."
metric = "iops"
compare = "baseline"
claims = [{ subjects = ["iscsi"], at_least = -9 }]
"""


def make_run(root, model: str, ratio: float) -> RunDir:
    """The study over ``model``, iSCSI at ``ratio`` of the direct path's IOPS (±0.5 %) at both load points."""
    plan = load_plan_text(PLAN, device_model=model)
    rd = RunDir.create(root, "arrays", RunStart(plan=plan.model_dump(mode="json"), plan_text=PLAN,
                                                plan_format=PLAN_FORMAT,
                                                provenance=Provenance(protolab="0.1.0", kernel="6.1")))
    rng = np.random.default_rng(len(model))
    seq = 0
    for load in (0, 1):
        for rep in range(1, 5):
            for config, k in (("direct", 1.0), ("iscsi", ratio)):
                seq += 1
                iops = 700 * (load + 1) * k * (1 + rng.normal(0, 0.005))
                d = DirectionResult(ios=int(iops * 2), iops=iops, bins_ns={5_600_000: 100})
                res = CellResult(iops=iops, mbps=iops * 4096 / 1e6, read=d, write=DirectionResult(), lat_mean_us=5600,
                                 percentiles_us={"p99": 9000.0}, jobs=load + 1, runtime_s=2.0, errors=0)
                rd.add_record(CellRecord(
                    run_id=rd.run_id, seq=seq, cell_id=f"tr3808-4k__{config}__{load}__r{rep}", workload="tr3808-4k",
                    configuration=config, baseline=config == "direct", load_index=load, hosts=1,
                    streams_per_host=2 * load + 1, oio_per_stream=4, total_oio=4 * (2 * load + 1), repeat=rep,
                    started="", ended="", result=res, raw_output="", job_file=""))
    rd.events.session_ended(0, "complete")
    return rd


def test_the_verdict_of_each_claim_over_each_device_model_in_one_table(tmp_path):
    ram = make_run(tmp_path / "a", "ram", 0.40)  # iSCSI at 40 % of direct: not within 9 %
    hdd = make_run(tmp_path / "b", "hdd-array", 0.97)  # at 97 %: within 9 %
    path, rows, text, pairs = run_compare(ram.path, hdd.path, out=tmp_path / "cmp")
    assert "- lab device model (A: ram: no device model (the pool answers from RAM); B: hdd-array: 5.5ms±1.5ms ×70, " \
           "no throughput cap, no cache, writes acknowledged in 500us (write-back))" in text
    [pair] = pairs
    assert (pair.a.verdict, pair.b.verdict) == ("not reproduced", "reproduced") and pair.changed
    assert "The verdict differs between A and B in 1 of 1 claims: claim of finding 1 (A: not reproduced; " \
           "B: reproduced)." in text
    # the figures are each run's own: iSCSI −60 % of direct over the RAM pool, −3 % over the array
    assert pair.a.figures.startswith("change −60 % (intervals −61 to −59 %)"), pair.a.figures
    assert pair.b.figures.startswith("change −2.8 to −2.5 %"), pair.b.figures
    assert text.index("## The seed's claims in A and in B") < text.index("## B relative to A")
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert 'id="claims"' in html and "not reproduced" in html and 'class="changed"' in html
    [row] = list(csv.DictReader((tmp_path / "cmp" / "claims.csv").open()))
    assert (row["verdict A"], row["verdict B"], row["verdict differs"]) == ("not reproduced", "reproduced", "yes")
    # each side's detectable difference: 4 repeats a side at 0.5 % spread, the ±2 % noise band its floor
    for side, v in (("A", pair.a), ("B", pair.b)):
        lo, hi = v.mdd_range
        assert 2.0 <= lo <= hi < 3.0 and all(p.mdd is not None for p in v.parts)
        assert row[f"MDD {side}"] == v.mdd and v.mdd in (f"{lo:.1f} %", f"{lo:.1f}–{hi:.1f} %")
        assert f"| {v.mdd} |" in text and f"<td>{v.mdd}</td>" in html
    out = CliRunner().invoke(app, ["compare", str(ram.path), str(hdd.path), "--out", str(tmp_path / "j"), "--json"])
    assert out.exit_code == 0, out.output
    [claim] = json.loads(out.output)["claims"]
    assert claim["verdict A"] == "not reproduced" and claim["verdict B"] == "reproduced"
    assert (claim["MDD A"], claim["MDD B"]) == (pair.a.mdd, pair.b.mdd)


def test_runs_without_seed_claims_have_no_claims_table(tmp_path):
    text = PLAN.split("[[seed_findings]]")[0]
    plan = load_plan_text(text)
    runs = []
    for name in ("a", "b"):
        rd = RunDir.create(tmp_path / name, "plain", RunStart(plan=plan.model_dump(mode="json"), plan_text=text,
                                                             plan_format=PLAN_FORMAT, provenance=Provenance()))
        d = DirectionResult(ios=1000, iops=500.0, bins_ns={5_600_000: 100})
        for rep in (1, 2, 3):
            res = CellResult(iops=500.0 + rep, mbps=2.0, read=d, write=DirectionResult(), lat_mean_us=5600,
                             percentiles_us={}, jobs=1, runtime_s=2.0, errors=0)
            rd.add_record(CellRecord(run_id=rd.run_id, seq=rep, cell_id=f"w__direct__0__r{rep}", workload="tr3808-4k",
                                     configuration="direct", baseline=True, load_index=0, hosts=1, streams_per_host=1,
                                     oio_per_stream=4, total_oio=4, repeat=rep, started="", ended="", result=res,
                                     raw_output="", job_file=""))
        runs.append(rd)
    path, rows, text, pairs = run_compare(runs[0].path, runs[1].path, out=tmp_path / "cmp")
    assert pairs == [] and "seed's claims" not in text and not (tmp_path / "cmp" / "claims.csv").exists()
    assert "lab device model" not in text  # the same model (hdd-array) in both
