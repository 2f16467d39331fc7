"""Configurations that differ only in MTU are compared directly: what jumbo frames did, per protocol."""

import numpy as np

from protolab.analysis.pairs import mtu_pairs, pair_findings
from protolab.analysis.relative import Row
from protolab.plan.load import load_plan_text

PLAN = """
name = "p"
baseline = "local"
workloads = ["tr3808-4k"]
[lab.link]
rate = "1GbE"
mtu = 1500
[[configurations]]
name = "local"
target = "lab:local"
[[configurations]]
name = "nbd-1500"
target = "lab:nbd"
[[configurations]]
name = "nbd-9000"
target = "lab:nbd"
link = { mtu = 9000 }
[[configurations]]
name = "iscsi-9000"
target = "lab:iscsi"
link = { mtu = 9000 }
[[configurations]]
name = "nbd-9000-delay"
target = "lab:nbd"
link = { mtu = 9000, delay = "1ms" }
[[load_points]]
streams = 1
"""


def _row(config, samples):
    return Row("tr3808-4k", 0, "1×1×4=4", config, config == "local", len(samples["iops"]),
               {k: float(np.median(v)) for k, v in samples.items()}, samples, {})


def test_only_configurations_that_differ_in_mtu_alone_are_paired():
    assert mtu_pairs(load_plan_text(PLAN)) == [("nbd-1500", "nbd-9000", 1500, 9000)]


def test_a_called_drop_in_packets_and_an_untested_pair():
    plan = load_plan_text(PLAN)
    rng = np.random.default_rng(1)
    small = {"packets_per_io": list(rng.normal(7.7, 0.05, 5)), "iops": list(rng.normal(10000, 40, 5))}
    jumbo = {"packets_per_io": list(rng.normal(2.2, 0.02, 5)), "iops": list(rng.normal(10010, 40, 5))}
    rows = [_row("nbd-1500", small), _row("nbd-9000", jumbo)]
    found = {f.metric: f.text for f in pair_findings(rows, plan)}
    assert found["packets_per_io"].startswith("tr3808-4k: at 1×1×4=4, MTU 9000 (nbd-9000) against MTU 1500 "
                                              "(nbd-1500): 72 % (")
    assert found["packets_per_io"].endswith("fewer packets per I/O.")
    assert "no clear difference in IOPS" in found["iops"] or "within ±2 %" in found["iops"]
    two = [_row("nbd-1500", {k: v[:2] for k, v in small.items()}), _row("nbd-9000", {k: v[:2] for k, v in jumbo.items()})]
    texts = [f.text for f in pair_findings(two, plan)]
    assert any(t.endswith("packets per I/O not tested (2 repeats; 3 needed).") for t in texts)
    assert not any("no clear difference" in t for t in texts)
