"""CPU per role from real cgroups, the offload state of interfaces, and what derive() makes of them."""

import os
import subprocess
import sys
import time

import pytest

from protolab.analysis.derived import SEGMENTS, derive
from protolab.proc import Completed, FakeRunner
from protolab.telemetry.cgroups import RoleCgroups, find_root, leftover_groups
from protolab.telemetry.net import parse_offloads, read_offloads
from protolab.telemetry.telemetry_window import Window

BURN = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"]


@pytest.fixture
def groups():
    if os.geteuid() != 0 or find_root() is None:
        pytest.skip("needs root and a cgroup v2 (or v1 cpuacct) hierarchy")
    cg = RoleCgroups(f"unit{os.getpid()}")
    cg.create()
    yield cg
    cg.remove()
    assert not leftover_groups(f"unit{os.getpid()}")


def test_a_wrapped_command_is_counted_in_its_role_only(groups):
    before = groups.read()
    assert set(before) == {"servers", "loadgen", "hypervisors"}
    subprocess.run(groups.wrap("loadgen", BURN), check=True, timeout=30)
    after = groups.read()
    assert 0.35 <= after["loadgen"] - before["loadgen"] <= 1.0
    assert after["servers"] - before["servers"] < 0.05


def test_cpu_wait_counts_a_role_whose_tasks_queue_for_the_cores(groups):
    if groups.kind != "v2" or not (groups.path("loadgen") / "cpu.pressure").exists():
        pytest.skip("needs cgroup v2 with PSI (cpu.pressure)")
    before = groups.cpu_wait()
    assert set(before) == {"servers", "loadgen", "hypervisors"}
    n = (os.cpu_count() or 1) + 1  # one burner more than the cores: one of them always waits
    procs = [subprocess.Popen(groups.wrap("loadgen", BURN)) for _ in range(n)]
    for p in procs:
        p.wait(timeout=30)
    after = groups.cpu_wait()
    assert after["loadgen"] - before["loadgen"] >= 0.1
    assert after["servers"] - before["servers"] < 0.05


def test_children_follow_and_a_moved_pid_counts(groups):
    # the burner runs as a child of a shell that joined the cgroup: fork inherits it
    subprocess.run(groups.wrap("servers", ["sh", "-c", " ".join(f"'{a}'" for a in BURN)]), check=True, timeout=30)
    assert groups.read()["servers"] >= 0.35
    p = subprocess.Popen(["sleep", "5"])
    try:
        groups.add("hypervisors", p.pid)
        assert p.pid in groups.pids()
    finally:
        p.kill()
        p.wait()


def test_remove_takes_stragglers_out_and_leaves_nothing():
    if os.geteuid() != 0 or find_root() is None:
        pytest.skip("needs root and a cgroup hierarchy")
    cg = RoleCgroups(f"unitrm{os.getpid()}")
    cg.create()
    p = subprocess.Popen(cg.wrap("servers", ["sleep", "5"]))
    try:
        for _ in range(100):  # until the shell has joined and exec'd sleep
            if p.pid in cg.pids() and b"sleep" in open(f"/proc/{p.pid}/cmdline", "rb").read():
                break
            time.sleep(0.02)
        assert p.pid in cg.pids()
        removed = cg.remove()
        assert str(cg.group) in removed and not cg.group.exists()
        assert p.poll() is None  # still running, now outside
    finally:
        p.kill()
        p.wait()


def test_window_reads_roles_and_offloads():
    ethtool = "tcp-segmentation-offload: off\ngeneric-segmentation-offload: off\ngeneric-receive-offload: off\n"
    runner = FakeRunner(answers={("ethtool", "-k"): Completed(("ethtool",), 0, ethtool, ""),
                                 ("ip",): Completed(("ip",), 0, "[]", "")})

    class Roles:
        n = 0.0

        def read(self):
            self.n += 1.5
            return {"servers": self.n, "loadgen": 2 * self.n}

        def cpu_wait(self):
            return {"loadgen": self.n / 3}

    w = Window.of(runner, interfaces=[("ns", "veth0")], cgroups=Roles())  # type: ignore[arg-type]
    d = w.delta(w.sample(), w.sample())
    assert d["roles_cpu_s"] == {"servers": 1.5, "loadgen": 3.0}
    assert d["roles_cpu_wait_s"] == {"loadgen": pytest.approx(0.5)}
    assert d["offloads"] == {"ns/veth0": False}


def test_offloads_parse_and_read():
    assert parse_offloads("tcp-segmentation-offload: off\ngeneric-receive-offload: on [fixed]\n")
    assert not parse_offloads("tcp-segmentation-offload: off\ngeneric-segmentation-offload: off\n")
    assert read_offloads(FakeRunner(answers={("ethtool",): Completed(("ethtool",), 1, "", "no such device")}),
                         "ns", "x") is None
    if os.geteuid() == 0:  # the real ethtool on loopback, which has GSO/GRO on by default
        from protolab.proc import SubprocessRunner
        out = subprocess.run(["ethtool", "-k", "lo"], capture_output=True, text=True).stdout
        assert read_offloads(SubprocessRunner(), None, "lo") == parse_offloads(out)


def _telemetry(offloads, roles=None, busy=1.0):
    t = {"elapsed_s": 1.0, "machine_busy_s": busy, "machine_total_s": 2.0, "servers_cpu_s": {"tgtd": 0.3},
         "interfaces": {"st/p0": {"rx_bytes": 1000, "tx_bytes": 9000, "rx_packets": 20, "tx_packets": 60}},
         "offloads": {"st/p0": offloads}}
    if roles is not None:
        t["roles_cpu_s"] = roles
    return t


def test_packets_are_frames_only_with_offloads_off():
    off = derive(10, 0.1, _telemetry(False), ["st/p0"])
    assert off["packets_counted_as"] == "frames" and off["frames_per_io"] == 8.0 and "segments_per_io" not in off
    on = derive(10, 0.1, _telemetry(True), ["st/p0"])
    assert on["packets_counted_as"] == SEGMENTS and on["segments_per_io"] == 8.0 and "frames_per_io" not in on
    unknown = derive(10, 0.1, _telemetry(None), ["st/p0"])
    assert "frames_per_io" not in unknown


def test_role_cpu_replaces_process_figures_and_flags_a_busy_machine():
    quiet = derive(1000, 0.2, _telemetry(False, {"servers": 0.4, "loadgen": 0.5, "hypervisors": 0.0}, busy=1.0),
                   ["st/p0"])
    assert quiet["cpu_source"] == "cgroup"
    assert quiet["cpu_us_per_io_server"] == pytest.approx(400) and quiet["cpu_us_per_io_loadgen"] == pytest.approx(500)
    assert quiet["loadgen_cpu_s_fio"] == 0.2
    assert quiet["machine_other_cpu_s"] == pytest.approx(0.1) and not quiet["machine_busy_other_work"]
    busy = derive(1000, 0.2, _telemetry(False, {"servers": 0.4, "loadgen": 0.5, "hypervisors": 0.0}, busy=1.9),
                  ["st/p0"])
    assert busy["machine_other_share"] == pytest.approx(0.5) and busy["machine_busy_other_work"]
    assert busy["cpu_us_per_io_server"] == quiet["cpu_us_per_io_server"]
    legacy = derive(1000, 0.2, _telemetry(False), ["st/p0"])
    assert legacy["cpu_source"] == "process" and legacy["cpu_us_per_io_server"] == pytest.approx(300)


def test_busy_note_counts_flagged_windows():
    from protolab.analysis.derived import busy_note

    quiet = {"machine_busy_other_work": False, "machine_other_share": 0.1, "cpu_source": "cgroup"}
    busy = {"machine_busy_other_work": True, "machine_other_share": 0.62, "cpu_source": "cgroup"}
    assert busy_note([quiet, quiet]) == ""
    note = busy_note([quiet, busy, busy])
    assert note.startswith("2 of 3 windows ran while the machine was busy with other work (up to 62 % of its CPU)")
    assert "come from their cgroups" in note
    assert "may include that work" in busy_note([{**busy, "cpu_source": "process"}])


def test_lab_down_all_removes_the_prefix_role_cgroups_only():
    if os.geteuid() != 0 or find_root() is None:
        pytest.skip("needs root and a cgroup hierarchy")
    from protolab.lab import down_all

    mine, longer = RoleCgroups(f"plq{os.getpid() % 1000:03d}"), RoleCgroups(f"plq{os.getpid() % 1000:03d}x")
    mine.create()
    longer.create()
    try:
        removed = down_all(mine.name)
        assert f"cgroup {mine.group}" in removed and not mine.group.exists()
        assert longer.group.exists()  # another prefix that merely starts the same is left alone
    finally:
        longer.remove()
        mine.remove()
