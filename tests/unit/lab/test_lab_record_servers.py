"""The lab record, teardown order, server command lines, and the Lab facade's refusals (fake runner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.lab import Lab
from protolab.lab.lab_cli import lab_protocols
from protolab.lab.procs import Processes
from protolab.lab.record import Record
from protolab.lab.servers.ganesha import ganesha_config, private_run
from protolab.lab.servers.nbdkit import nbdkit_argv
from protolab.lab.servers.tgt import choose_control_port, setup_commands
from protolab.lab.teardown import undo_record
from protolab.plan.topology import LabSpec
from protolab.proc import Completed, FakeRunner


def test_record_round_trips_and_writes_atomically(tmp_path):
    rec = Record.create(tmp_path, {"prefix": "pl"}, ["nbd", "iscsi"])
    r = rec.add("netns", "pl-sw")
    loop = rec.add("loop", "/x/pl-pool.img")
    rec.update(loop, device="/dev/loop7")
    rec.set_state(up=True)
    again = Record.load(tmp_path)
    assert again.protocols == ["iscsi", "nbd"]
    assert [(x.kind, x.name) for x in again.resources] == [("netns", "pl-sw"), ("loop", "/x/pl-pool.img")]
    assert again.resources[1].extra == {"device": "/dev/loop7"}
    assert again.state == {"up": True}
    rec.drop(r)
    assert [x.kind for x in Record.load(tmp_path).resources] == ["loop"]
    assert not list(tmp_path.glob("*.tmp"))


def test_record_errors_are_one_line(tmp_path):
    with pytest.raises(ProtolabError, match="no lab is up in"):
        Record.load(tmp_path)
    (tmp_path / "lab.json").write_text(json.dumps({"schema": 99}))
    with pytest.raises(ProtolabError, match="schema 99 is not 1.*lab down --all"):
        Record.load(tmp_path)


def test_teardown_replays_the_record_newest_first(tmp_path):
    rec = Record.create(tmp_path, {}, [])
    for ns in ("pl-sw", "pl-st"):
        rec.add("netns", ns)
    rec.add("loop", str(tmp_path / "pl-pool.img"))
    rec.add("mount", str(tmp_path / "not-mounted"))
    runner = FakeRunner({
        ("ip", "netns", "list"): Completed((), 0, "pl-sw\npl-st\n", ""),
        ("losetup", "--noheadings"): Completed((), 0, "/dev/loop3\n", ""),
    })
    removed = undo_record(rec, runner, Processes(runner, rec, tmp_path))
    assert removed == ["loop device /dev/loop3", "namespace pl-st", "namespace pl-sw"]
    argvs = [" ".join(a) for a, _ in runner.calls]
    assert argvs.index("losetup --detach /dev/loop3") < argvs.index("ip netns del pl-st") \
        < argvs.index("ip netns del pl-sw")
    assert not (tmp_path / "lab.json").exists()


def test_tgt_commands_target_lun_and_initiator_list():
    cmds = [" ".join(c) for c in setup_commands(1234, "iqn.x:pl.iscsi", Path("/p/iscsi/data"),
                                                 ["198.18.0.10", "198.18.1.10"])]
    assert cmds[0] == "tgtadm -C 1234 --lld iscsi --op new --mode target --tid 1 -T iqn.x:pl.iscsi"
    assert cmds[1].endswith("--op new --mode logicalunit --tid 1 --lun 1 -b /p/iscsi/data")
    assert cmds[2].endswith("--op bind --mode target --tid 1 -I 198.18.0.10")
    assert cmds[3].endswith("-I 198.18.1.10")
    assert len(cmds) == 4  # no ALL: hosts not listed are refused


def test_tgt_control_port_is_stable_and_skips_taken_ones():
    first = choose_control_port("pl", taken=lambda p: False)
    assert first == choose_control_port("pl", taken=lambda p: False)
    assert choose_control_port("pl", taken=lambda p: p == first) == first + 1


def test_ganesha_config_lists_only_granted_clients():
    conf = ganesha_config(Path("/w/pl-pool-nfs"), ["198.18.0.10"], Path("/w/rec"))
    assert "Clients = 198.18.0.10;" in conf
    assert "Access_Type = None;" in conf  # everyone else
    assert 'Path = "/w/pl-pool-nfs";' in conf and 'Pseudo = "/w/pl-pool-nfs";' in conf
    assert "Protocols = 3, 4;" in conf and "Graceless = true;" in conf
    assert "CLIENT" not in ganesha_config(Path("/w/x"), [], Path("/w/rec"))


def test_server_command_lines():
    argv = nbdkit_argv(Path("/p/nbd/data"), Path("/w/nbdkit.pid"))
    assert argv[:3] == ["sh", "-c", 'nbdkit "$@" & wait $!']
    assert argv[4:] == ["--foreground", "--pidfile", "/w/nbdkit.pid", "-p", "10809", "file", "/p/nbd/data"]
    wrapped = private_run(["rpcbind", "-f"])
    assert wrapped[:4] == ["unshare", "--mount", "--propagation", "slave"]
    assert "mount -t tmpfs" in wrapped[6] and wrapped[-2:] == ["rpcbind", "-f"]


def test_lab_refuses_unknown_protocols_and_small_pools(tmp_path):
    with pytest.raises(ProtolabError, match="unknown protocol.*afp.*lab:iscsi"):
        Lab(LabSpec(), {"afp"}, tmp_path, FakeRunner())
    lab = Lab(LabSpec(pool_size="256M", export_size="128M"), {"nbd", "nfs"}, tmp_path, FakeRunner())
    with pytest.raises(ProtolabError, match="pool_size 256M is too small for 2 export.*at least 512M"):
        lab.up()
    assert not (tmp_path / "lab.json").exists()
    # the knfsd volume is one more: its ext4 image is the export, 64 MiB and 1/64 of the export on top
    lab = Lab(LabSpec(pool_size="512M", export_size="128M"), {"nbd", "nfs"}, tmp_path, FakeRunner(), knfsd=True)
    with pytest.raises(ProtolabError, match="pool_size 512M is too small for 3 export.*at least 706M"):
        lab.up()
    assert not (tmp_path / "lab.json").exists()


def test_lab_refuses_when_prefix_namespaces_exist(tmp_path):
    runner = FakeRunner({("ip", "netns", "list"): Completed((), 0, "pl-st (id: 1)\nother\n", "")})
    with pytest.raises(ProtolabError, match=r"prefix 'pl' exist already \(pl-st\).*set another lab.prefix") as e:
        Lab(LabSpec(), {"nbd"}, tmp_path / "w", runner).up()
    assert "--all" not in str(e.value) and not (tmp_path / "w").exists()  # no holder of 'pl': no sweep; nothing made


def test_lab_refuses_a_second_lab_in_the_same_workdir(tmp_path):
    Record.create(tmp_path, LabSpec().model_dump(mode="json"), ["nbd"])
    with pytest.raises(ProtolabError, match="already up in"):
        Lab(LabSpec(), {"nbd"}, tmp_path, FakeRunner()).up()


def test_endpoint_needs_an_up_lab(tmp_path):
    with pytest.raises(ProtolabError, match="not up"):
        Lab(LabSpec(), {"nbd"}, tmp_path, FakeRunner()).endpoint("nbd")


def test_from_record_reattaches_spec_protocols_and_link(tmp_path):
    spec = LabSpec(hosts=2)
    rec = Record.create(tmp_path, spec.model_dump(mode="json"), ["nbd", "local"])
    rec.set_state(up=True, link={"rate": "10GbE", "mtu": 9000, "delay": None, "loss_pct": 0.0,
                                 "offloads": True})
    lab = Lab.from_record(tmp_path, FakeRunner())
    assert lab.spec == spec and lab.protocols == {"nbd", "local"}
    assert lab.link.mtu == 9000
    ep = lab.endpoint("nbd", host=1)
    assert (ep.url, ep.netns, ep.size_bytes) == ("nbd://198.18.0.1:10809", "pl-h1", 256 * 1024**2)
    local = lab.endpoint("local")
    assert local.netns == "pl-st" and local.url == str(tmp_path / "pl-mnt" / "pl-pool" / "local" / "protolab.dat")
    with pytest.raises(ProtolabError, match="no iscsi export"):
        lab.endpoint("iscsi")
    with pytest.raises(ProtolabError, match="no host 2"):
        lab.endpoint("nbd", host=2)


class _Cfg:
    def __init__(self, name, target):
        self.name, self.target = name, target


class _Plan:
    def __init__(self, *targets):
        self.configurations = [_Cfg(f"c{i}", t) for i, t in enumerate(targets)]


def _plan_text(*targets: str) -> str:
    configs = "".join(f'[[configurations]]\nname = "c{i}"\ntarget = "{t}"\n' for i, t in enumerate(targets))
    return f'name = "p"\nbaseline = "c0"\nworkloads = ["tr3808-4k"]\nload_points = [{{ streams = 1 }}]\n{configs}'


def test_lab_protocols_of_a_plan():
    from protolab.plan.load import load_plan_text
    from protolab.plan.preflight import preflight

    assert lab_protocols(load_plan_text(_plan_text("lab:iscsi", "lab:local", "/dev/sdb"))) == {"iscsi", "local"}
    with pytest.raises(ProtolabError, match=r"configurations\[0\] \(c0\)\.target: unknown lab target 'lab:afp'"):
        preflight(load_plan_text(_plan_text("lab:afp")), "p.toml")
