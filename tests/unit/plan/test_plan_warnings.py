"""`validate` warns (one line each, exit 0) about plans whose numbers would mislead."""

from __future__ import annotations

from protolab.plan.load import load_plan_text
from protolab.plan.warnings import plan_warnings

BASE = """name = "w"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 2, oio = 4 }}]
[method]
repeats = {repeats}
data_size = "256M"
[[configurations]]
name = "a"
target = "{target}"
ioengine = "{engine}"
"""


def test_two_repeats_warn():
    p = load_plan_text(BASE.format(repeats=2, target="./t.dat", engine="io_uring"))
    [w] = plan_warnings(p)
    assert w.startswith("method.repeats = 2: with fewer than 3 repeats per cell no difference can be tested")


def test_synchronous_engine_with_depth_warns_with_the_real_number_in_flight():
    p = load_plan_text(BASE.format(repeats=3, target="./t.dat", engine="psync"))
    [w] = plan_warnings(p)
    assert "psync is synchronous" in w and "1×2×4=8 has 2 in flight, not 8" in w


def test_data_set_smaller_than_memory_warns_for_lab_targets_only():
    lab = load_plan_text(BASE.format(repeats=3, target="lab:nbd", engine="io_uring"))
    [w] = plan_warnings(lab, memory_bytes=24 * 1024**3)
    assert "its data set (256M) is smaller than the server's memory (24G)" in w and "page cache" in w
    local = load_plan_text(BASE.format(repeats=3, target="./t.dat", engine="io_uring"))
    assert plan_warnings(local, memory_bytes=24 * 1024**3) == []  # O_DIRECT on a local file: no cache


def test_validate_prints_warnings_and_exits_zero(tmp_path, cli):
    plan = tmp_path / "p.toml"
    plan.write_text(BASE.format(repeats=2, target="./t.dat", engine="psync"))
    p = cli("validate", plan, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 2 and all(str(plan) in ln for ln in lines)
    assert "is valid" in p.stdout
