"""The roles' CPU weight (telemetry.priority): real cgroups on this machine, a v2 tree with the cpu
controller laid out in a temporary directory, and the testbed that raises it for a run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from protolab.plan.load import load_plan_text
from protolab.plan.model import Method
from protolab.proc import SubprocessRunner
from protolab.run.progress import Silent
from protolab.run.testbed import Testbed as _Testbed
from protolab.telemetry.cgroups import RoleCgroups, leftover_groups
from protolab.telemetry.priority import V1_SHARES, V2_WEIGHT, CpuPriority, _own_cgroup


def _real(name: str) -> RoleCgroups:
    cg = RoleCgroups(name)
    if os.geteuid() != 0 or not cg.available or not cg.priority.available:
        pytest.skip("needs root, role cgroups and a cpu controller (v1 cpu.shares or v2 cpu.weight)")
    return cg


def _wait_in(cg: RoleCgroups, p: subprocess.Popen, what: bytes) -> None:
    for _ in range(200):  # until the shell has joined and exec'd the command
        if p.pid in cg.pids() and Path(f"/proc/{p.pid}/comm").read_bytes().strip() == what:
            return
        time.sleep(0.02)
    raise AssertionError(f"{p.pid} never ran {what!r} in its role cgroup")


def _weighted(cg: RoleCgroups) -> set[int]:
    pr = cg.priority
    if pr.kind == "v2":  # the roles are under the weighted group through their own cgroups
        return set(cg.pids()) | {int(x) for x in pr.procs_file().read_text().split()}
    return {int(x) for d in pr.group.iterdir() if d.is_dir() for x in (d / "cgroup.procs").read_text().split()}


def test_prioritise_moves_the_roles_and_the_harness_and_remove_puts_everything_back():
    cg = _real(f"unitprio{os.getpid()}")
    cg.create()
    procs: list[subprocess.Popen] = []
    try:
        early = subprocess.Popen(cg.wrap("servers", ["sleep", "30"]))  # a server started before the weight
        procs.append(early)
        _wait_in(cg, early, b"sleep")
        harness = subprocess.Popen(["sleep", "30"])
        procs.append(harness)
        before = Path(f"/proc/{harness.pid}/cgroup").read_text()
        assert not cg.priority.on
        assert cg.prioritise(harness_pid=harness.pid)
        assert cg.priority.on
        value = (cg.priority.group / ("cpu.weight" if cg.priority.kind == "v2" else "cpu.shares")).read_text()
        assert int(value) == (V2_WEIGHT if cg.priority.kind == "v2" else V1_SHARES)
        late = subprocess.Popen(cg.wrap("loadgen", ["sleep", "30"]))  # a fio run after it
        procs.append(late)
        _wait_in(cg, late, b"sleep")
        assert {early.pid, late.pid, harness.pid} <= _weighted(cg)
        assert Path(f"/proc/{harness.pid}/cgroup").read_text() != before
        removed = cg.remove()
        assert str(cg.group) in removed and not cg.group.exists() and not cg.priority.group.exists()
        assert Path(f"/proc/{harness.pid}/cgroup").read_text() == before  # back where it was
        assert all(p.poll() is None for p in procs)  # the processes live on, outside
        assert not leftover_groups(f"unitprio{os.getpid()}")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        cg.remove()


def test_a_wrapped_command_that_cannot_join_does_not_run(tmp_path):
    cg = _real(f"unitprio2{os.getpid()}")
    cg.create()
    try:
        cg.prioritise()
        argv = cg.wrap("loadgen", ["touch", str(tmp_path / "ran")])
        cg.priority.remove()  # the weight's group went (a teardown in the meantime): the wrap's join fails
        assert subprocess.run(argv, capture_output=True).returncode == 125
        assert not (tmp_path / "ran").exists()
    finally:
        cg.remove()


def test_v2_with_the_cpu_controller_sets_cpu_weight_on_the_group_and_a_harness_child(tmp_path):
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    group = tmp_path / "protolab-x"
    group.mkdir()
    pr = CpuPriority(group, "v2", sys_cgroup=tmp_path / "no-v1")
    assert pr.available and pr.kind == "v2" and not pr.on
    pr.raise_([123])  # in v2 the roles are inside the group already: nothing to move
    assert (group / "cpu.weight").read_text() == f"{V2_WEIGHT}\n" and pr.on
    assert pr.procs_file() == group / "harness" / "cgroup.procs"
    pr.join(os.getpid())
    assert pr.procs_file().read_text() == f"{os.getpid()}\n"
    assert pr._left[os.getpid()].is_relative_to(tmp_path)
    pr.procs_file().unlink()  # a real cgroup's files go with its directory; a temporary one's do not
    assert pr.remove() == [str(group / "harness")] and not (group / "harness").exists()


def test_no_cpu_controller_means_no_weight(tmp_path):
    (tmp_path / "cgroup.subtree_control").write_text("memory pids\n")
    group = tmp_path / "protolab-x"
    pr = CpuPriority(group, "v2", sys_cgroup=tmp_path / "no-v1")
    assert not pr.available and not pr.on and pr.remove() == []
    cg = RoleCgroups("x", (tmp_path, "v2"))
    cg.priority = pr
    assert cg.prioritise(harness_pid=os.getpid()) is False


def test_own_cgroup_reads_the_right_hierarchy():
    text = "12:cpuset:/\n5:cpu:/user.slice\n4:cpuacct:/\n1:name=systemd:/init.scope\n0::/user.slice/s.scope\n"
    assert _own_cgroup("v1", text) == "/user.slice"
    assert _own_cgroup("v2", text) == "/user.slice/s.scope"
    assert _own_cgroup("v1", "3:cpu,cpuacct:/a\n") == "/a"
    assert _own_cgroup("v1", "0::/\n") is None


def test_method_cpu_priority_is_normal_unless_the_plan_says_high():
    assert Method().cpu_priority == "normal"
    assert Method(cpu_priority="high").cpu_priority == "high"
    assert Method(cpu_priority="normal").cpu_priority == "normal"
    # the report's Plan and Method sections say it (Method.summary)
    assert Method(cpu_priority="high").summary().endswith(", the lab's roles at the highest CPU weight")
    assert "CPU weight" not in Method().summary()
    with pytest.raises(ValueError):
        Method(cpu_priority="max")


PLAN = """
name = "prio"
baseline = "a"
workloads = ["tr3808-4k"]
[targets.t]
url = "{dir}/data.dat"
[[configurations]]
name = "a"
target = "t"
[[load_points]]
streams = 1
oio = 1
[method]
cpu_priority = "{priority}"
"""


@pytest.mark.parametrize("priority", ["high", "normal"])
def test_the_testbed_raises_the_weight_for_its_life_only_when_the_plan_asks(tmp_path, priority):
    from protolab.engine.fio import Fio

    plan = load_plan_text(PLAN.format(dir=tmp_path, priority=priority))
    bed = _Testbed(plan, Fio("fio"), SubprocessRunner(), Silent())
    own = Path("/proc/self/cgroup").read_text()
    run = tmp_path / "run-1"
    run.mkdir()
    try:
        bed.up(run)
        if bed.cgroups is None or not bed.cgroups.priority.available:
            pytest.skip("needs role cgroups and a cpu controller")
        assert bed.cgroups.priority.on is (priority == "high")
        assert (Path("/proc/self/cgroup").read_text() != own) is (priority == "high")
        weight = bed.cgroups.priority.group
    finally:
        bed.down()
    assert Path("/proc/self/cgroup").read_text() == own
    assert not weight.exists() and not leftover_groups("run-run-1")


def test_a_window_records_the_weight_only_when_it_held_at_both_ends():
    from protolab.analysis.derived import busy_note, derive
    from protolab.proc import FakeRunner
    from protolab.telemetry.telemetry_window import Window, interpolate

    class Roles:
        def __init__(self):
            self.priority = type("P", (), {"on": True})()

        def read(self):
            return {"servers": 1.0, "loadgen": 1.0}

        def cpu_wait(self):
            return {}

    roles = Roles()
    w = Window.of(FakeRunner(), cgroups=roles)  # type: ignore[arg-type]
    a, b = w.sample(), w.sample()
    assert a.of("roles_cpu_weight") and w.delta(a, b)["roles_cpu_weight"] == "highest"
    assert interpolate(a, b, (a.t + b.t) / 2).of("roles_cpu_weight")
    roles.priority.on = False  # dropped before the window's end (teardown): not claimed
    assert "roles_cpu_weight" not in w.delta(a, w.sample())
    t = {"elapsed_s": 1.0, "machine_busy_s": 1.9, "machine_total_s": 2.0, "roles_cpu_s": {"servers": 0.2},
         "roles_cpu_weight": "highest"}
    busy = derive(1000, 0.1, t)
    assert busy["cpu_weight"] == "highest" and busy["machine_busy_other_work"]
    assert busy_note([busy]).endswith("come from their cgroups and hold (they ran at the highest CPU weight: "
                                      "that work had the CPU they left idle)")
    assert "highest" not in busy_note([derive(1000, 0.1, {**t, "roles_cpu_weight": None})])


def test_a_v2_limit_sets_cpu_max_of_the_role_and_the_window_records_it_with_the_throttled_time(tmp_path):
    from protolab.telemetry.priority import RoleCpuLimit

    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    group = tmp_path / "protolab-x"
    (group / "servers").mkdir(parents=True)
    (group / "loadgen").mkdir()
    (group / "cgroup.subtree_control").write_text("\n")
    pr = CpuPriority(group, "v2", sys_cgroup=tmp_path / "no-v1")
    pr.limit("servers", 0.25, {})
    assert (group / "cgroup.subtree_control").read_text() == "+cpu\n"  # the group enables cpu for its roles
    assert (group / "servers" / "cpu.max").read_text() == "25000 100000\n"
    (group / "loadgen" / "cpu.max").write_text("max 100000\n")
    assert pr.limits(("servers", "loadgen")) == {"servers": 0.25}
    src = RoleCpuLimit(pr, ("servers", "loadgen"))
    (group / "servers" / "cpu.stat").write_text("usage_usec 5\nthrottled_usec 1000000\n")
    a = src.sample()
    (group / "servers" / "cpu.stat").write_text("usage_usec 9\nthrottled_usec 1750000\n")
    b = src.sample()
    assert src.delta(a, b) == {"roles_cpu_limit": {"servers": 0.25}, "roles_cpu_throttled_s": {"servers": 0.75}}
    pr.limit("servers", None, {})  # lifted: nothing claimed for the next window
    assert (group / "servers" / "cpu.max").read_text() == "max 100000\n" and src.delta(b, src.sample()) == {}
    assert src.delta(a, ({"servers": 0.5}, b[1])) == {}  # changed inside the window: not claimed


def test_a_real_limit_holds_a_burner_near_its_quota_and_remove_leaves_nothing():
    cg = _real(f"unitcap{os.getpid()}")
    cg.create()
    burner = None
    try:
        burner = subprocess.Popen(cg.wrap("servers", ["sh", "-c", "while :; do :; done"]))
        _wait_in(cg, burner, b"sh")
        cg.limit({"servers": 0.2})
        assert cg.priority.limits(("servers", "loadgen")) == {"servers": pytest.approx(0.2)}
        assert not cg.priority.on  # a limit alone does not raise the weight
        a = cg.read()["servers"]
        time.sleep(1.0)
        used = cg.read()["servers"] - a
        assert used < 0.2 * 1.0 * 1.5  # a core's worth of spinning held to a fifth (CFS quota, one period's slack)
        cg.limit({})  # lifted
        assert cg.priority.limits(("servers",)) == {}
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        cg.remove()
    assert not leftover_groups(f"unitcap{os.getpid()}")
