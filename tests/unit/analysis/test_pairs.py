"""Configurations that differ only in MTU are compared directly: what jumbo frames did, per protocol."""

import numpy as np

from protolab.analysis.pairs import MAX_NAMED_LOADS, mtu_pairs, pair_findings
from protolab.analysis.relative import Row
from protolab.plan.coordinates import Point
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
    return Row("tr3808-4k", Point((("load", 0),), "1×1×4=4"), config, config == "local", len(samples["iops"]),
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


def test_many_load_points_make_one_sentence_per_pair_and_metric():
    """A long load ladder gives one sentence per pair, workload and metric, counting load points, not listing 40."""
    plan = load_plan_text(PLAN)
    rng = np.random.default_rng(2)
    rows = []
    for li in range(40):
        label = f"1×{li + 1}×4={4 * (li + 1)}"
        small = {"packets_per_io": list(rng.normal(7.7, 0.05, 5))}
        jumbo = {"packets_per_io": list(rng.normal(2.2 if li < 30 else 7.7, 0.02 if li < 30 else 0.05, 5))}
        for config, s in (("nbd-1500", small), ("nbd-9000", jumbo)):
            rows.append(Row("tr3808-4k", Point((("load", li),), label), config, False, 5, {k: float(np.median(v)) for k, v in s.items()},
                            s, {}))
    found = [f for f in pair_findings(rows, plan, metrics=["packets_per_io"])]
    assert len(found) == 1
    text = found[0].text
    assert text.startswith("tr3808-4k: MTU 9000 (nbd-9000) against MTU 1500 (nbd-1500): 7")
    assert "fewer packets per I/O at 30 of 40 load points (1×1×4=4 … 1×30×4=120)" in text
    rest = text.split("load points (1×1×4=4 … 1×30×4=120)")[1]
    # the other 10 load points: within the band (equivalence test) or no clear difference, each named
    assert "1×31×4=124" in rest and "1×40×4=160" in rest and "no clear difference in packets per I/O" in rest
    assert text.count("=") <= 2 + 2 * MAX_NAMED_LOADS  # never a list of every load point
