"""Names, addresses and the ip/tc/ethtool commands of a lab, checked without touching the machine."""

from __future__ import annotations

from ipaddress import IPv4Address

import pytest

from protolab.lab.names import LAB_NETWORK, LinkEnd, Names
from protolab.lab.netns import Net, guard_commands, offload_command, tc_commands
from protolab.plan.topology import LabSpec, LinkSpec
from protolab.proc import Completed, FakeRunner


def test_every_name_carries_the_prefix_and_fits_linux():
    spec = LabSpec(prefix="abcdef", hosts=200, nics_per_host=8, storage_ports=8)
    names = Names(spec)
    assert all(ns.startswith("abcdef-") for ns in names.namespaces())
    ends = [e for link in names.links() for e in (link.near, link.switch)]
    assert len(ends) == 2 * (8 + 200 * 8)
    assert all(e.ifname.startswith("abcdef") and len(e.ifname) <= 15 for e in ends)
    assert len({(e.netns, e.ifname) for e in ends}) == len(ends)
    assert names.bridge.startswith("abcdef") and len(names.bridge) <= 15


def test_addresses_are_in_the_benchmark_range_and_unique():
    spec = LabSpec(hosts=200, nics_per_host=8, storage_ports=8)
    names = Names(spec)
    addrs = [link.address.split("/")[0] for link in names.links()]
    assert len(set(addrs)) == len(addrs)
    assert all(IPv4Address(a) in LAB_NETWORK for a in addrs)
    assert names.storage_address(0) == "198.18.0.1"
    assert names.storage_address(3) == "198.18.3.1"
    assert names.host_address(5, 3) == "198.18.3.15"  # NIC 3 reaches port 3


def test_host_nic_shares_the_subnet_of_its_storage_port():
    spec = LabSpec.model_validate({"hosts": 1, "nics_per_host": 2, "storage_ports": 2,
                                   "paths": [{"nic": 0, "port": 1}, {"nic": 1, "port": 0}]})
    names = Names(spec)
    assert names.host_link(0, 0).address == "198.18.1.10/24"
    assert names.host_link(0, 1).address == "198.18.0.10/24"


END = LinkEnd("pl-h0", "plh0n0")


def test_tc_for_1gbe_is_tbf_with_a_1ms_burst():
    [cmd] = tc_commands(END, LinkSpec(rate="1GbE", mtu=1500))
    assert cmd[:8] == ["tc", "-n", "pl-h0", "qdisc", "add", "dev", "plh0n0", "root"]
    # offloads on: the rate carries a full frame (1,514 B counted) in the time 1,538 B take on a wire
    assert cmd[cmd.index("tbf") + 1:] == ["rate", "984395318bit", "burst", "125000", "limit", "625000"]
    assert 1_000_000_000 * 1514 // 1538 == 984395318


def test_tc_with_offloads_off_charges_each_frame_preamble_fcs_and_gap():
    [cmd] = tc_commands(END, LinkSpec(rate="1GbE", mtu=9000, offloads=False))
    assert cmd[cmd.index("root") + 1:cmd.index("tbf") + 3] == [
        "handle", "1:", "stab", "overhead", "24", "mpu", "84", "linklayer", "ethernet", "tbf", "rate", "1000000000bit"]


def test_tc_burst_never_below_two_jumbo_frames():
    [cmd] = tc_commands(END, LinkSpec(rate="10mbit", mtu=9000))
    assert int(cmd[cmd.index("burst") + 1]) == 2 * 9014


def test_tc_with_delay_and_loss_hangs_netem_below_tbf():
    tbf, netem = tc_commands(END, LinkSpec(rate="10GbE", delay="2ms", loss_pct=0.5))
    assert "tbf" in tbf
    assert netem[7:] == ["parent", "1:1", "handle", "10:", "netem", "delay", "2000us", "loss", "0.5%",
                         "limit", "100000"]


def test_tc_unshaped_links():
    assert tc_commands(END, LinkSpec(rate=None)) == []
    [netem] = tc_commands(END, LinkSpec(rate=None, delay="100us"))
    assert netem[7:11] == ["root", "handle", "10:", "netem"]


def test_offloads():
    assert offload_command(END, False) == ["ethtool", "-K", "plh0n0", "tso", "off", "gso", "off", "gro", "off"]
    assert offload_command(END, True)[-1] == "on"


def test_nbd_guard_moves_the_local_table_and_prohibits_others():
    cmds = guard_commands("pl-st", ["pls0", "pls1"], 10809, ["198.18.0.10"])
    joined = [" ".join(c) for c in cmds]
    assert joined[0] == "ip -n pl-st rule add pref 1000 lookup local"
    assert joined[1] == "ip -n pl-st rule del pref 0"
    assert "pref 100 from 198.18.0.10 ipproto tcp dport 10809 lookup local" in joined[2]
    assert joined[3].endswith("pref 101 iif pls0 ipproto tcp dport 10809 prohibit")
    assert joined[4].endswith("pref 101 iif pls1 ipproto tcp dport 10809 prohibit")


def test_configure_sets_both_ends_mtu_offloads_then_qdiscs():
    runner = FakeRunner()
    link = Names(LabSpec()).host_link(0, 0)
    Net(runner).configure(link, LinkSpec(mtu=9000, offloads=False))
    argvs = [" ".join(a) for a, _ in runner.calls]
    assert "ip -n pl-h0 link set dev plh0n0 mtu 9000" in argvs
    assert "ip -n pl-sw link set dev plh0n0b mtu 9000" in argvs
    assert sum("ethtool -K" in a for a in argvs) == 2
    assert sum(" tbf " in a for a in argvs) == 2
    mtu_last = max(i for i, a in enumerate(argvs) if " mtu " in a)
    tbf_first = min(i for i, a in enumerate(argvs) if " tbf " in a)
    assert mtu_last < tbf_first  # the burst is sized for the MTU in force


def test_list_netns_parses_ids():
    runner = FakeRunner({("ip", "netns", "list"): Completed((), 0, "pl-h0 (id: 3)\npl-st\n\n", "")})
    assert Net(runner).list_netns() == ["pl-h0", "pl-st"]


def test_netem_missing_is_one_line_protolab_error():
    from protolab.errors import ProtolabError

    runner = FakeRunner({("tc", "-n", "pl-sw", "qdisc", "add"): Completed(
        (), 2, "", "Error: Specified qdisc kind is unknown.\n")})
    with pytest.raises(ProtolabError, match="delay and loss_pct need the kernel's netem") as err:
        Net(runner).check_netem("pl-sw")
    assert "\n" not in str(err.value)


def _config(tmp_path, text: str | None, gz: bool = True):
    import gzip

    proc = tmp_path / "config.gz"
    if text is not None and gz:
        proc.write_bytes(gzip.compress(text.encode()))
    boot = tmp_path / "boot"
    boot.mkdir()
    if text is not None and not gz:
        (boot / "config-6.1.0-x").write_text(text)
    return {"release": "6.1.0-x", "sys_module": tmp_path / "sys-module", "proc_config": proc, "boot": boot,
            "modules": tmp_path / "modules"}


@pytest.mark.parametrize("text, gz, module, expect", [
    ("# CONFIG_NET_SCH_NETEM is not set\nCONFIG_NET_SCH_TBF=y\n", True, False, False),  # this machine's kernel
    ("CONFIG_NET_SCH_NETEM=y\n", True, False, True),
    ("CONFIG_NET_SCH_NETEM=m\n", False, True, True),  # Debian's: a module, installed
    ("CONFIG_NET_SCH_NETEM=m\n", False, False, False),  # a module that is not installed
    (None, True, False, None),  # the kernel says nothing of itself: not known
])
def test_kernel_netem_reads_what_the_kernel_says_of_itself(tmp_path, text, gz, module, expect):
    from protolab.lab.netns import kernel_netem

    where = _config(tmp_path, text, gz)
    if module:
        ko = where["modules"] / "6.1.0-x" / "kernel/net/sched/sch_netem.ko.xz"
        ko.parent.mkdir(parents=True)
        ko.touch()
    assert kernel_netem(**where) is expect
    (where["sys_module"] / "sch_netem").mkdir(parents=True)  # loaded: whatever the configuration says
    assert kernel_netem(**where) is True
