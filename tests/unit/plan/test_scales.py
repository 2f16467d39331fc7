"""[scale.NAME] tables: one plan at several sizes; `plans` lists each built-in's runtime per scale."""

import pytest

from protolab.errors import PlanError
from protolab.plan.load import load_plan_text

PLAN = """
name = "s"
baseline = "a"
workloads = ["tr3808-4k"]
[[configurations]]
name = "a"
target = "/tmp/x.dat"
[[load_points]]
streams = 8
[method]
duration = "5m"
repeats = 5
[scale.quick]
load_points = [{ streams = 1 }]
[scale.quick.method]
duration = "2s"
[scale.full.method]
repeats = 10
"""


def test_quick_is_the_default_and_merges_tables_key_by_key():
    p = load_plan_text(PLAN)
    assert p.scale == "quick" and p.method.duration == 2 and p.method.repeats == 5
    assert [lp.streams for lp in p.load_points] == [1]  # arrays are replaced


def test_full_scale_and_unknown_scale():
    p = load_plan_text(PLAN, scale="full")
    assert p.scale == "full" and p.method.duration == 300 and p.method.repeats == 10
    assert [lp.streams for lp in p.load_points] == [8]
    with pytest.raises(PlanError) as e:
        load_plan_text(PLAN, scale="huge", source="s.toml")
    assert str(e.value) == "s.toml: --scale huge: no such scale; this plan has quick, full"


def test_a_plan_without_scales_refuses_a_scale():
    text = PLAN.split("[scale.quick]")[0]
    assert load_plan_text(text).scale is None
    with pytest.raises(PlanError, match=r"^p.toml: --scale full: this plan has no \[scale.\*\] tables"):
        load_plan_text(text, scale="full", source="p.toml")
