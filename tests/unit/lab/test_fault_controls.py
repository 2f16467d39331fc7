"""The lab's fault controls with a fake runner: which links go down and up, servers killed and started through their
adapters, the device model's stall and corruption, every fault recorded and undone by restore() and by teardown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.lab import Lab
from protolab.lab import fault_controls as fc
from protolab.lab.procs import Processes, alive
from protolab.lab.record import Record
from protolab.lab.servers import ADAPTERS
from protolab.lab.teardown import undo_record
from protolab.plan.topology import LabSpec
from protolab.proc import Completed, FakeRunner

TBF = Completed((), 0, "qdisc tbf 1: root refcnt 2 rate 1Gbit burst 125000b lat 5ms\n", "")


def _lab(tmp_path: Path, runner: FakeRunner, protocols=("nbd", "local"), **spec) -> Lab:
    rec = Record.create(tmp_path, LabSpec(**spec).model_dump(mode="json"), list(protocols))
    rec.set_state(up=True, link={"rate": "1GbE", "mtu": 1500, "delay": None, "loss_pct": 0.0, "offloads": True})
    return Lab.from_record(tmp_path, runner)


def _links(runner: FakeRunner, state: str) -> list[str]:
    return [f"{a[2]}/{a[6]}" for a, _ in runner.calls if a[:1] == ("ip",) and a[-1] == state]


def test_a_port_down_takes_its_own_link_and_every_nic_reaching_it_down_on_both_sides(tmp_path):
    runner = FakeRunner({("tc", "-n"): TBF})
    lab = _lab(tmp_path, runner, hosts=2, nics_per_host=2, storage_ports=2)
    lab.faults.link_down(1)
    assert _links(runner, "down") == ["pl-st/pls1", "pl-sw/pls1b", "pl-h0/plh0n1", "pl-sw/plh0n1b",
                                      "pl-h1/plh1n1", "pl-sw/plh1n1b"]
    lab.faults.link_down(1)  # again: the same commands, one fault recorded
    assert [(r.name, r.extra) for r in lab.record.find("fault")] == [("link-down", {"port": 1})]
    assert lab.faults.in_force() == ["storage port 1 down"]
    lab.faults.link_up(1)
    assert _links(runner, "up") == ["pl-sw/pls1b", "pl-st/pls1", "pl-sw/plh0n1b", "pl-h0/plh0n1",
                                    "pl-sw/plh1n1b", "pl-h1/plh1n1"]
    assert lab.record.find("fault") == []
    assert not any(a[:5] == ("tc", "-n", "pl-st", "qdisc", "add") for a, _ in runner.calls)  # tbf was still there
    lab.faults.link_down()  # every port
    assert {r.extra["port"] for r in lab.record.find("fault")} == {0, 1}
    with pytest.raises(ProtolabError, match=r"^lab faults: link_down: storage port 2 does not exist \(lab.storage_"):
        lab.faults.link_down(2)


def test_link_up_puts_the_shaping_back_where_a_root_qdisc_was_lost(tmp_path):
    runner = FakeRunner({("tc", "-n", "pl-st", "qdisc", "show"): Completed((), 0, "qdisc noqueue 0: root\n", ""),
                         ("tc", "-n", "pl-sw", "qdisc", "show"): TBF, ("tc", "-n", "pl-h0", "qdisc", "show"): TBF})
    lab = _lab(tmp_path, runner)
    lab.faults.link_down(0)
    lab.faults.link_up(0)
    added = [" ".join(a) for a, _ in runner.calls if a[3:5] == ("qdisc", "add")]
    assert added and all("tbf rate" in a for a in added)
    assert {a.split()[2] for a in added} == {"pl-st", "pl-sw"}  # the storage link anew, both ends; not the host's


def test_a_server_is_killed_and_started_again_through_its_adapter(tmp_path, monkeypatch):
    runner = FakeRunner()
    lab = _lab(tmp_path, runner)
    procs = lab.faults.procs
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    procs.handles[sleeper.pid] = sleeper
    procs.record.add("process", "nbdkit-parent", pid=sleeper.pid, started=None)
    procs.record.add("process", "rpcbind", pid=1, started=None)  # another server's: left alone
    started = []
    monkeypatch.setattr(type(ADAPTERS["nbdkit"]), "restart", lambda self, s: started.append((self.name, s)))
    lab.faults.server_kill("nbd")
    assert sleeper.returncode == -9 and not alive(sleeper.pid)
    assert [r.name for r in lab.record.find("process")] == ["rpcbind"]
    assert [(r.name, r.extra) for r in lab.record.find("fault")] == [("server-down", {"protocol": "nbd"})]
    assert lab.faults.in_force() == ["nbd server killed"]
    lab.faults.server_kill("nbd")  # idempotent
    assert len(lab.record.find("fault")) == 1
    lab.faults.server_start("nbd")
    assert [(n, s.protocol, s.granted) for n, s in started] == [("nbdkit", "nbd", ["198.18.0.10"])]
    assert lab.record.find("fault") == []
    lab.faults.server_start("nbd")  # running: nothing to do
    assert len(started) == 1


def test_servers_the_lab_does_not_run_are_refused_in_one_line(tmp_path):
    lab = _lab(tmp_path, FakeRunner(), protocols=("nbd", "local", "nvme-tcp"))
    with pytest.raises(ProtolabError, match=r"^lab faults: server_kill: the lab serves no iscsi export \(it serves "):
        lab.faults.server_kill("iscsi")
    with pytest.raises(ProtolabError, match=r"no server process for local \(no server\)$"):
        lab.faults.server_kill("local")
    with pytest.raises(ProtolabError, match=r"nvme-tcp \(its server, nvmet, runs in the storage server guest\)$"):
        lab.faults.server_start("nvme-tcp")


class _Device:
    def __init__(self, served: Path):
        self.served, self.calls = served, []

    def stall(self, seconds):
        self.calls.append(("stall", seconds))

    def corrupt(self, offset, length):
        self.calls.append(("corrupt", offset, length))


def test_the_device_controls_are_refused_over_the_ram_pool_and_out_of_range(tmp_path):
    lab = _lab(tmp_path, FakeRunner())
    for call in (lambda f: f.stall(2), lambda f: f.corrupt(0, 4096), lambda f: f.clear_corrupt()):
        with pytest.raises(ProtolabError, match=r"^lab faults: \w+ needs the pool's device model, .* is RAM"):
            call(lab.faults)
    faults = lab.faults
    faults.device = _Device(tmp_path / "pl-mnt" / "pl-dev" / "pl-disk")
    with pytest.raises(ProtolabError, match=r"stall of 0 s: give 0 < seconds <= 3600"):
        faults.stall(0)
    size = faults.spec.pool_bytes
    for bad in ((-1, 10), (0, 0), (size - 10, 11), (size, 1)):
        with pytest.raises(ProtolabError, match=r"corrupt .* within the pool's \d+ bytes"):
            faults.corrupt(*bad)
    assert faults.device.calls == [] and lab.record.find("fault") == []


def test_stall_and_corruption_are_recorded_told_to_the_daemon_and_restored(tmp_path, monkeypatch):
    lab = _lab(tmp_path, FakeRunner())
    faults = lab.faults
    disk = tmp_path / "pl-mnt" / "pl-dev" / "pl-disk"
    faults.device = dev = _Device(disk)
    faults.stall(2.0)
    faults.stall(3.0)  # one record, its figure updated
    faults.corrupt(8192, 4096)
    assert dev.calls == [("stall", 2.0), ("stall", 3.0), ("corrupt", 8192, 4096)]
    assert [(r.name, r.extra) for r in lab.record.find("fault")] == [
        ("stall", {"disk": str(disk), "seconds": 3.0}), ("corrupt", {"disk": str(disk), "offset": 8192,
                                                                     "length": 4096})]
    Record.load(tmp_path).check_resources(tmp_path, "pl")  # a record teardown accepts
    assert faults.in_force() == ["device stalled for 3 s", "device corrupting 4096 bytes at 8192"]
    assert "  faults   device stalled for 3 s; device corrupting 4096 bytes at 8192 (" in lab.describe()
    told = []
    monkeypatch.setattr(fc, "get_control", lambda served, name: "1500000000")
    monkeypatch.setattr(fc, "set_control", lambda served, name, value: told.append((served, name, value)))
    faults.link_down(0)
    assert faults.restore() == ["device stall ended 1.5 s early",
                                "device corruption of 4096 bytes at 8192 cleared", "link of storage port 0 up again"]
    assert told == [(disk, "stall", "0")] and dev.calls[-1] == ("corrupt", 0, 0)
    assert lab.record.find("fault") == [] and faults.restore() == []


def test_a_stall_that_ended_by_itself_is_not_reported_as_undone(tmp_path, monkeypatch):
    faults = _lab(tmp_path, FakeRunner()).faults
    faults.device = _Device(tmp_path / "pl-disk")
    faults.stall(1.0)
    monkeypatch.setattr(fc, "get_control", lambda served, name: "0")
    assert faults.restore() == [] and faults.record.find("fault") == []


def test_teardown_undoes_faults_first_from_the_record_alone(tmp_path, monkeypatch):
    rec = Record.create(tmp_path, LabSpec().model_dump(mode="json"), ["nbd"])
    rec.add("netns", "pl-st")
    rec.add("fault", "link-down", port=0)
    rec.add("fault", "stall", disk=str(tmp_path / "pl-mnt" / "pl-dev" / "pl-disk"), seconds=300.0)
    rec.add("fault", "server-down", protocol="nbd")
    told = []
    monkeypatch.setattr(fc, "set_control", lambda served, name, value: told.append((name, value)))
    runner = FakeRunner({("ip", "netns", "list"): Completed((), 0, "pl-st\n", "")})
    removed = undo_record(rec, runner, Processes(runner, rec, tmp_path))
    assert removed == ["device stall ended", "link of storage port 0 up again", "namespace pl-st"]
    assert told == [("stall", "0")]
    argvs = [" ".join(a) for a, _ in runner.calls]
    assert argvs.index("ip -n pl-st link set dev pls0 up") < argvs.index("ip netns del pl-st")


@pytest.mark.parametrize("fault", [
    {"name": "stall", "extra": {"disk": "/etc/passwd"}},
    {"name": "corrupt", "extra": {"disk": "relative/pl-disk"}},
    {"name": "link-down", "extra": {"port": "0; reboot"}},
    {"name": "unplug", "extra": {}},
])
def test_a_record_naming_a_fault_the_lab_could_not_have_made_is_refused(tmp_path, fault):
    rec = Record.create(tmp_path, LabSpec().model_dump(mode="json"), ["nbd"])
    rec.add("fault", fault["name"], **fault["extra"])
    with pytest.raises(ProtolabError, match=f"resource fault '{fault['name']}' is not one this lab"):
        Record.load(tmp_path).check_resources(tmp_path, "pl")


def test_tgt_restarts_on_its_control_port_once_the_dead_tgtds_socket_is_gone(tmp_path, monkeypatch):
    from protolab.lab.servers import tgt

    monkeypatch.setattr(tgt, "SOCKET_DIR", tmp_path / "tgtd")
    (tmp_path / "tgtd").mkdir()
    lab = _lab(tmp_path / "w", FakeRunner(), protocols=("iscsi",))
    rec = lab.record
    port = tgt.choose_control_port("pl")
    rec.add("tgtd-socket", str(port), port=port)
    for path in tgt.socket_paths(port):
        path.touch()  # what a killed tgtd leaves
    ports = []
    monkeypatch.setattr(tgt.TgtAdapter, "start", lambda self, s: ports.append(tgt.choose_control_port("pl")))
    lab.faults.server_kill("iscsi")  # no tgtd recorded: nothing to kill, the fault recorded
    lab.faults.server_start("iscsi")
    assert ports == [port] and rec.find("tgtd-socket") == []
    assert not any(p.exists() for p in tgt.socket_paths(port))


def test_restore_undoes_every_fault_it_can_then_names_the_one_it_could_not(tmp_path, monkeypatch):
    from protolab.errors import ToolError

    lab = _lab(tmp_path, FakeRunner({("tc", "-n"): TBF}))
    lab.faults.server_kill("nbd")
    lab.faults.link_down(0)

    def broken(self, s):
        raise ToolError("nbdkit was not ready within 20 s")

    monkeypatch.setattr(type(ADAPTERS["nbdkit"]), "restart", broken)
    with pytest.raises(ToolError, match=r"^lab faults: restore could not undo server-down \{'protocol': 'nbd'\}: "
                                        r"nbdkit was not ready"):
        lab.faults.restore()
    assert lab.faults.in_force() == ["nbd server killed"]  # the link came up all the same
