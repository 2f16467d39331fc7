"""The plan model, built-in library and expansion order."""

from __future__ import annotations

import pytest

from protolab.plan.expand import expand
from protolab.plan.library import BUILTIN_WORKLOADS, builtin_studies
from protolab.plan.load import load_builtin, load_plan_text
from protolab.plan.units import parse_duration, parse_size


def test_builtin_workloads_match_the_studies():
    w = BUILTIN_WORKLOADS
    for name in ["tr3808-4k", "tr3808-8k", "tr3916-oltp", "exchange-2to1", "vmtn-max-read", "vmtn-real-life",
                 "vmtn-max-50read", "vmtn-random-8k"]:
        assert name in w
    assert (w["tr3808-4k"].block_size, w["tr3808-4k"].read_pct, w["tr3808-4k"].random_pct) == (4096, 75, 100)
    assert (w["tr3808-8k"].block_size, w["tr3808-8k"].read_pct) == (8192, 75)
    assert (w["tr3916-oltp"].block_size, w["tr3916-oltp"].read_pct, w["tr3916-oltp"].random_pct) == (8192, 60, 100)
    assert w["exchange-2to1"].read_pct == pytest.approx(200 / 3)
    assert (w["vmtn-max-read"].block_size, w["vmtn-max-read"].random_pct) == (32768, 0)
    assert (w["vmtn-real-life"].read_pct, w["vmtn-real-life"].random_pct) == (65, 60)
    assert w["vmtn-max-50read"].read_pct == 50 and w["vmtn-random-8k"].read_pct == 70


def test_override_field_by_field_and_custom():
    plan = load_plan_text("""
name = "o"
baseline = "a"
workloads = ["tr3808-4k", { name = "tr3808-8k", read_pct = 100 }, { name = "mine", base = "tr3916-oltp", oio = 32 },
             { name = "mix", block_size = { "4k" = 1, "64k" = 1 }, read_pct = 50, random_pct = 0 }]
[[configurations]]
name = "a"
target = "/tmp/a"
[[load_points]]
streams = 1
""")
    w = {x.name: x for x in plan.workloads}
    assert w["tr3808-4k"] == BUILTIN_WORKLOADS["tr3808-4k"]
    assert w["tr3808-8k"].read_pct == 100 and w["tr3808-8k"].block_size == 8192
    assert w["mine"].oio == 32 and w["mine"].read_pct == 60 and w["mine"].block_size == 8192
    assert w["mix"].block_size == {4096: 1.0, 65536: 1.0}


def test_expansion_interleaves_configurations_at_each_load_point():
    plan, _ = load_builtin("demo")
    cells = expand(plan)
    assert len(cells) == 2 * 1 * 3 * 3
    order = [(c.load_index, c.repeat, c.configuration.name) for c in cells[:8]]
    assert order == [(0, 1, "psync"), (0, 1, "io_uring"), (0, 2, "psync"), (0, 2, "io_uring"),
                     (0, 3, "psync"), (0, 3, "io_uring"), (1, 1, "psync"), (1, 1, "io_uring")]
    assert len({c.id for c in cells}) == len(cells)
    assert cells[-1].total_oio == 4 * 8


def test_load_ladder_of_tr3808():
    plan = load_plan_text("""
name = "l"
baseline = "a"
workloads = ["tr3808-4k"]
[[configurations]]
name = "a"
target = "/tmp/a"
[[load_points]]
hosts = 8
streams = 4
[[load_points]]
hosts = 8
streams = 12
[[load_points]]
hosts = 8
streams = 20
""")
    totals = [c.total_oio for c in expand(plan) if c.repeat == 1]
    assert totals == [128, 384, 640]


@pytest.mark.parametrize("text,n", [("4k", 4096), ("8KiB", 8192), ("1G", 2**30), ("512M", 2**29), (4096, 4096),
                                    ("1.5k", 1536)])
def test_sizes(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text,s", [("30s", 30), ("5m", 300), ("1h", 3600), (90, 90), ("500ms", 0.5),
                                    ("8h30m", 30600), ("1h 5m 30s", 3930), ("2m30s", 150)])
def test_durations(text, s):
    assert parse_duration(text) == s


@pytest.mark.parametrize("text", ["h", "5x", "", "m5", "30s5m"])
def test_bad_durations_say_what_to_write(text):
    with pytest.raises(ValueError, match="expected a duration like '30s', '5m', '8h30m' or 90"):
        parse_duration(text)


def test_builtin_studies_all_load():
    for name in builtin_studies():
        plan, _ = load_builtin(name)
        assert plan.baseline in [c.name for c in plan.configurations]


def test_heatmaps_are_asked_for_by_the_demo_and_dumped_only_when_asked():
    """[method] heatmap (plan.heatmap_option): make demo's study asks for them; a plan without them dumps as before
    (no plan-format bump), one with them keeps the key."""
    demo, _ = load_builtin("lab-demo")
    assert demo.method.heatmap is True and demo.model_dump()["method"]["heatmap"] is True
    plain, _ = load_builtin("demo")
    assert plain.method.heatmap is False and "heatmap" not in plain.model_dump()["method"]
    assert "verify" not in plain.model_dump()["method"]
