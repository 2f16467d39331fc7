"""The telemetry window over a fake machine: the figures every testbed's window gives — the lab's, the VM
testbed's (QEMU threads too) and this machine's — from the same counters, compared field by field with
tests/data/telemetry-window.json, which the window wrote before its counters became sources (its figures at
9987081)."""

import json
from pathlib import Path

import pytest

from conftest import DATA
from fake_machine import FakeMachine
from protolab.results.records import Telemetry
from protolab.telemetry.telemetry_window import Window
from protolab.vm.telemetry import QemuThreads

GOLDEN = DATA / "telemetry-window.json"
ST, H1 = "plfake-st", "plfake-h1"  # namespaces that do not exist: their counters come from the runner's `ip`
SERVERS = {"tgtd": 100, "ganesha": 300, "nbdkit": 400, "gone": 999}
INTERFACES = [(ST, "p0"), (ST, "p1"), (H1, "eth0"), (H1, "missing0")]
STORAGE = [(ST, "p0"), (ST, "p1")]
TIMES = (100.0, 102.5, 104.0)


def state(m: FakeMachine, k: int, weighted: bool = True) -> None:
    """The machine's counters at the k-th sample (k = 0, 1, 2), and the clock."""
    m.now = TIMES[k]
    m.stat((1000 + 300 * k, 5, 400 + 150 * k, 5000 + 50 * k, 20 + k, 3, 40 + 20 * k, 0), (10 + 5 * k, 30 + 15 * k))
    tgtd = {100: ("tgtd", 200 + 80 * k, 100 + 40 * k), 101: ("tgtd", 10 + 2 * k, 5 + k)}
    if k >= 1:
        tgtd[102] = ("tgtd", 7 * k, 0)  # born in the window: counts from 0
    m.process(100, tgtd, children=(200,), reaped=(3 * k, k))
    m.process(200, {200: ("tgtd-helper", 3 * k, k)})
    ganesha = {300: ("ganesha.nfsd", 50 + 10 * k, 20), 301: ("svc_5", 100 + 60 * k, 30 + 20 * k)}
    if k < 2:
        ganesha[302] = ("svc_6", 40 + 30 * k, 10)  # ends before the last sample
    m.process(300, ganesha)
    if k < 2:
        m.process(400, {400: ("nbdkit", 70 + 9 * k, 30 + 4 * k)})
    else:
        m.gone(400)
    m.process(500, {500: ("qemu-system-x86", 100 + 20 * k, 50 + 10 * k), 501: ("CPU 0/TCG", 1000 + 400 * k, 200 + 100 * k),
                    502: ("worker", 30 + 25 * k, 10 + 5 * k)})
    q600 = {600: ("qemu-system-x86", 90 + 10 * k, 40), 601: ("CPU 0/TCG", 800 + 300 * k, 100 + 50 * k)}
    if k >= 1:
        q600[602] = ("IO iothread1", 5 * k, 2 * k)
    m.process(600, q600)
    m.roles({"servers": 1_000_000 + 1_230_000 * k, "loadgen": 2_000_000 + 2_345_678 * k,
             "hypervisors": 500_000 + 3_000_001 * k},
            {"servers": 1000 + 50_000 * k, "loadgen": 2000 + 123_456 * k}, weighted)
    m.link(ST, "p0", 10_000 + 8_192_123 * k, 5_000 + 1_234_567 * k, 100 + 6000 * k, 50 + 3000 * k)
    m.link(ST, "p1", 20_000 + 4_100_007 * k, 7_000 + 654_321 * k, 200 + 3100 * k, 70 + 1500 * k)
    m.link(H1, "eth0", 30_000 + 1_888_888 * k, 9_000 + 12_291_000 * k, 300 + 4600 * k, 90 + 9100 * k)
    m.offload_state.update({"p0": "on", "p1": "off"})


def windows(m: FakeMachine, guests: list[int]) -> tuple[Window, Window, Window]:
    """(the lab's window, the VM testbed's window over ``guests``, this machine's window) reading ``m``."""
    cgroups = m.role_cgroups()

    def lab() -> Window:
        return Window.of(m.runner, server_pids=dict(SERVERS), interfaces=list(INTERFACES), clock=m.clock,
                         cgroups=cgroups, offload_ports=list(STORAGE), proc=m.proc)

    vm = lab()
    vm.add(QemuThreads(lambda: list(guests), proc=m.proc))  # as the VM testbed's window adds them
    return lab(), vm, Window.of(m.runner, clock=m.clock, cgroups=cgroups, proc=m.proc)


def figures(tmp_path: Path) -> dict:
    """Every window's delta over the fake machine: direct (two samples) and client (interpolated) runs."""
    out: dict = {}

    def run(name: str, pick: int, guests: list[int], weighted=(True, True, True), late: list[int] | None = None):
        m = FakeMachine(tmp_path / name)
        g = list(guests)
        win = windows(m, g)[pick]
        samples = []
        for k in range(3):
            state(m, k, weighted[k])
            if late is not None and k == 1:
                g.extend(late)
            samples.append(win.sample())
        out[f"{name}/direct"] = win.delta(samples[0], samples[1])
        before = win.interpolate(samples[0], samples[1], TIMES[0] + 0.4 * (TIMES[1] - TIMES[0]))
        after = win.interpolate(samples[1], samples[2], 103.1)
        out[f"{name}/client"] = win.delta(before, after)
        out[f"{name}/progress"] = [win.progress(s) for s in samples]

    run("lab", 0, [])
    run("vm", 1, [500, 600, 700])  # 700: a guest whose QEMU has gone
    run("vm-late-boot", 1, [500], late=[600])
    run("local", 2, [])
    run("weight-dropped", 0, [], weighted=(True, False, True))
    return json.loads(json.dumps(out))  # as stored: tuples become lists


def test_every_window_gives_the_figures_it_gave_before_its_counters_became_sources(tmp_path):
    got, want = figures(tmp_path), json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want)
    for case, delta in want.items():
        if case.endswith("/progress"):
            assert got[case] == delta, case
            continue
        assert sorted(got[case]) == sorted(delta), case
        for field in delta:
            assert got[case][field] == delta[field], f"{case}: {field}"
        ports = [f"{ns}/{i}" for ns, i in STORAGE]
        assert Telemetry(**got[case], storage_ports=ports) == Telemetry(**delta, storage_ports=ports)


def test_the_stored_figures_are_the_ones_the_counters_give():
    """The golden file itself, checked by hand against the counters of ``state``."""
    want = json.loads(GOLDEN.read_text())
    lab = want["lab/direct"]
    assert lab["elapsed_s"] == 2.5
    assert lab["machine_busy_s"] == pytest.approx((300 + 150 + 20) / 100)  # user, system, softirq
    assert lab["machine_total_s"] == pytest.approx((300 + 150 + 20 + 50 + 1) / 100)  # and idle, iowait
    # tgtd: its threads (80+40, 2+1, the new 7), its reaped children (3+1) and its live child (3+1)
    assert lab["servers_cpu_s"] == {"tgtd": pytest.approx(1.38), "ganesha": pytest.approx(1.2),
                                    "nbdkit": pytest.approx(0.13), "gone": None}
    assert lab["roles_cpu_s"] == {"servers": pytest.approx(1.23), "loadgen": pytest.approx(2.345678),
                                  "hypervisors": pytest.approx(3.000001)}
    assert lab["roles_cpu_wait_s"] == {"servers": pytest.approx(0.05), "loadgen": pytest.approx(0.123456)}
    assert lab["roles_cpu_weight"] == "highest"
    assert lab["interfaces"]["plfake-st/p0"] == {"rx_bytes": 8_192_123, "tx_bytes": 1_234_567, "rx_packets": 6000,
                                                 "tx_packets": 3000}
    assert sorted(lab["interfaces"]) == ["plfake-h1/eth0", "plfake-st/p0", "plfake-st/p1"]  # missing0: no counters
    assert lab["offloads"] == {"plfake-st/p0": True, "plfake-st/p1": False}
    assert lab["server_threads"]["tgtd"] == {"thread": "tgtd", "cpu_s": pytest.approx(1.2), "threads": 4,
                                             "live_cpu_s": pytest.approx(1.2 + 0.03 + 0.07 + 0.04)}
    assert lab["cores_softirq_s"] == [pytest.approx(0.05), pytest.approx(0.15)]
    assert "hypervisor_cpu_s" not in lab
    vm = want["vm/direct"]
    assert vm["hypervisor_cpu_s"] == {"vcpu": pytest.approx(5.0 + 3.5), "io": pytest.approx(0.3 + 0.3 + 0.1 + 0.07)}
    assert vm["hypervisor_thread"] == {"thread": "CPU 0/TCG", "cpu_s": pytest.approx(5.0), "threads": 6,
                                       "live_cpu_s": pytest.approx(5.0 + 3.5 + 0.3 + 0.3 + 0.1 + 0.07)}
    # a client run: the threads alive at both samples around each boundary (k = 0.4 and 1.4 of ``state``),
    # IO iothread1 born after the first sample counted from 0 (7 ticks × 1.4)
    assert want["vm/client"]["hypervisor_thread"] == {"thread": "CPU 0/TCG", "cpu_s": pytest.approx(5.0),
                                                      "threads": 6, "live_cpu_s": pytest.approx(9.298)}
    # the late guest's threads are missing at the first sample: all their time so far, as in hypervisor_cpu_s
    assert want["vm-late-boot/client"]["hypervisor_thread"]["cpu_s"] == pytest.approx(9.0 + 3.5 * 1.4)
    assert want["vm-late-boot/direct"]["hypervisor_cpu_s"]["vcpu"] == pytest.approx(5.0 + 12.5)  # the late guest: all its time so far
    assert want["local/direct"] == {"elapsed_s": 2.5, "machine_busy_s": lab["machine_busy_s"],
                                    "machine_total_s": lab["machine_total_s"], "servers_cpu_s": {}, "interfaces": {},
                                    "offloads": {}, "cores_softirq_s": lab["cores_softirq_s"],
                                    "roles_cpu_wait_s": lab["roles_cpu_wait_s"], "roles_cpu_weight": "highest",
                                    "roles_cpu_s": lab["roles_cpu_s"]}
    assert "roles_cpu_weight" not in want["weight-dropped/direct"]
    # a client run's boundaries, 40 % into the first pair of samples and 40 % into the second
    client = want["lab/client"]
    assert client["elapsed_s"] == pytest.approx(103.1 - 101.0)
    assert client["roles_cpu_s"]["servers"] == pytest.approx(1.23 * (1.4 - 0.4))
    assert want["lab/progress"][1] == [102.5, 10_000 + 8_192_123 + 5_000 + 1_234_567 + 20_000 + 4_100_007 + 7_000
                                       + 654_321]
