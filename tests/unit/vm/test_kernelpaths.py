"""The kernel data paths' guest command line words: every value checked before a guest's init reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.lab.names import Names
from protolab.lab.servers.nvmet import NvmeTarget
from protolab.lab.servers.words import check_nqn
from protolab.plan.topology import LabSpec
from protolab.vm.guestnet import DataNic
from protolab.vm.initiators.nvme import NvmeConnect
from protolab.vm.qemu import Disk, GuestSpec


@pytest.mark.parametrize("bad, match", [
    (dict(nqn="nqn.2024-01.org.x:a,b"), "is not an NVMe qualified name"),
    (dict(nqn="nqn.2024-01.org.x:a b"), "is not an NVMe qualified name"),
    (dict(hostnqn="nqn.2024-01.org.x:h\nx"), "is not an NVMe qualified name"),
    (dict(port=70000), "port 70000 is not a TCP port"),
    (dict(queues=0), "queues 0: give 1-128"),
])
def test_kernel_command_line_words_refuse_what_the_guest_could_misread(bad, match):
    """Lab-free: every value is checked before it reaches a guest's command line (its init splits on commas)."""
    good = dict(address="198.18.0.2", port=4420, nqn="nqn.2024-01.org.protolab:pl.nvme", queues=2,
                hostnqn="nqn.2024-01.org.protolab:pl.h0")
    assert NvmeConnect(**good).kernel_args() == [
        "pl.nvme=198.18.0.2,4420,nqn.2024-01.org.protolab:pl.nvme,2,nqn.2024-01.org.protolab:pl.h0"]
    with pytest.raises(ProtolabError, match=match):
        NvmeConnect(**{**good, **bad}).kernel_args()
    with pytest.raises(ValueError, match="outside the lab range"):
        NvmeTarget("10.0.0.1", 4420, good["nqn"], (good["hostnqn"],)).kernel_args()
    with pytest.raises(ProtolabError, match="no host may connect"):
        NvmeTarget("198.18.0.2", 4420, good["nqn"], ()).kernel_args()
    assert check_nqn("nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427")
    from protolab.vm.initiators.iscsi import IscsiLogin

    login = dict(address="198.18.0.2", port=3260, iqn="iqn.2024-01.org.protolab:pl.lio",
                 initiator="iqn.2024-01.org.protolab:pl.h0v0", sessions=2)
    assert IscsiLogin(**login).kernel_args() == [
        "pl.iscsi=198.18.0.2,3260,iqn.2024-01.org.protolab:pl.lio,iqn.2024-01.org.protolab:pl.h0v0,2,120,5,5"]
    for bad in ("iqn.2024-01.org.x:a,b", "iqn.2024-01.org.x:a\n", "iqn.2024-01.org.x:a b"):
        with pytest.raises(ProtolabError, match="is not an iSCSI name"):
            IscsiLogin(**{**login, "initiator": bad}).kernel_args()
    with pytest.raises(ProtolabError, match="iSCSI sessions 17: give 1-16"):
        IscsiLogin(**{**login, "sessions": 17}).kernel_args()
    from protolab.plan.initiator_timeouts import IscsiTimeouts

    short = IscsiTimeouts(replacement_timeout=3, noop_out_interval=1, noop_out_timeout=1)
    assert IscsiLogin(**login, timeouts=short).kernel_args()[0].endswith(",2,3,1,1")  # the guest's init reads them


def test_knfsd_exports_the_pool_volume_and_a_load_guest_mounts_it_with_checked_words():
    from protolab.lab.servers.knfsd import knfsd_words
    from protolab.plan.attach import NfsMount
    from protolab.vm.initiators.nfs import NfsClient
    from protolab.vm.kernelpaths import server_words

    assert NfsClient("198.18.0.2").kernel_args() == ["pl.nfs=198.18.0.2,4.1,1,0,0"]  # 0: the kernel's size
    assert NfsClient("198.18.0.2", NfsMount(version=3, nconnect=4, rsize=65536)).kernel_args() == [
        "pl.nfs=198.18.0.2,3,4,65536,0"]
    # the plan refuses these already; the word is checked again before it reaches a command line
    for bad, match in ((dict(version="4,1"), "NFS version '4,1'"), (dict(nconnect=17), "nconnect 17: give 1-16"),
                       (dict(wsize=5000), "rsize or wsize 5000")):
        with pytest.raises(ProtolabError, match=match):
            NfsClient("198.18.0.2", NfsMount.model_construct(**{**NfsMount().model_dump(), **bad})).kernel_args()
    with pytest.raises(ValueError, match="outside the lab range"):
        NfsClient("10.0.0.1").kernel_args()
    assert knfsd_words("198.18.0.2", ["198.18.0.128"], "pl2") == ["pl.knfsd=198.18.0.2,198.18.0.128,pl2"]
    assert knfsd_words("198.18.0.2", ["198.18.0.128"]) == ["pl.knfsd=198.18.0.2,198.18.0.128"]  # a tmpfs
    with pytest.raises(ProtolabError, match="protolab's disks are pl0"):
        knfsd_words("198.18.0.2", ["198.18.0.128"], "sda,x")
    names = Names(LabSpec(prefix="pl"))
    words, served = server_words(names, "198.18.0.2", {"lio": ["iqn.2024-01.org.protolab:pl.h0v0c1"],
                                                       "knfsd": ["198.18.0.128", "198.18.0.129"]})
    assert served == ["lio", "knfsd"] and words[-1] == "pl.knfsd=198.18.0.2,198.18.0.128+198.18.0.129,pl1"
    assert words[0].startswith("pl.lio=198.18.0.2,3260,") and words[0].endswith(",pl0")
    words, served = server_words(names, "198.18.0.2", {"knfsd": ["198.18.0.128"]}, own_volume=False)
    assert served == [] and words == ["pl.knfsd=198.18.0.2,198.18.0.128"]
    with pytest.raises(ProtolabError, match="serves nothing"):
        server_words(names, "198.18.0.2", {"nvmet": []})


def test_a_data_nic_is_a_tap_routed_behind_its_namespace_and_named_on_the_kernel_command_line(tmp_path):
    names = Names(LabSpec(prefix="pq", hosts=2))
    assert (names.server_guest_address(0), names.load_guest_address(1, 3)) == ("198.18.0.2", "198.18.0.131")
    assert (names.nqn, names.host_nqn(1, 2)) == ("nqn.2024-01.org.protolab:pq.nvme",
                                                 "nqn.2024-01.org.protolab:pq.h1v2c0")
    # each configuration's guest its own name: a second iSCSI login with one name and ISID ends the first session
    assert names.initiator_iqn(0, 0, 5) == "iqn.2024-01.org.protolab:pq.h0v0c5" != names.initiator_iqn(0, 0, 6)
    assert check_nqn(names.nqn) and check_nqn(names.host_nqn(1, 2, 7))
    with pytest.raises(ValueError, match="load guests 0-126"):
        names.load_guest_address(0, 127)
    nic = DataNic("pq-h1", names.tap("h1"), "198.18.0.129", 24, 9000, "pqh1n0", index=17)
    assert nic.qemu_args() == ["-netdev", "tap,id=data,ifname=pqkh1,script=no,downscript=no",
                               "-device", "virtio-net-pci,netdev=data,mac=52:54:00:70:6c:11"]
    assert nic.commands() == [
        ["ip", "-n", "pq-h1", "link", "set", "dev", "pqkh1", "mtu", "9000", "up"],
        ["ip", "-n", "pq-h1", "route", "replace", "198.18.0.129/32", "dev", "pqkh1"],
        ["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.conf.pqkh1.proxy_arp=1",
         "net.ipv4.conf.pqh1n0.proxy_arp=1"]]
    spec = GuestSpec("g", tmp_path / "k", tmp_path / "i", disks=(Disk("/var/lib/protolab/x/data", "virtio-blk"),),
                     nic=nic, append=("pl.nvme=198.18.0.2,4420,nqn.2024-01.org.protolab:pq.nvme,1,"
                                      "nqn.2024-01.org.protolab:pq.h1",))
    argv = spec.argv(tmp_path / "pid", tmp_path / "console")
    append = argv[argv.index("-append") + 1]
    assert append.endswith("pl.mac=52:54:00:70:6c:11 pl.ip=198.18.0.129/24 pl.mtu=9000") and "pl.nvme=" in append
    assert "file=/var/lib/protolab/x/data" in " ".join(argv) and "ifname=pqkh1" in " ".join(argv)
    with pytest.raises(ProtolabError, match="URLs or a local file only"):
        Disk("relative/file", "virtio-blk")


KERNEL_PLAN = """name = "x"
baseline = "a"
workloads = ["tr3916-oltp"]
[[load_points]]
streams = 1
[[configurations]]
name = "a"
target = "lab:nbd"
[[configurations]]
name = "b"
target = "lab:nvme-tcp"
"""


def check_validate(tmp_path, text: str, message: str | None) -> None:
    """`protolab validate` on ``text``: valid when ``message`` is None, else exit 2 and that one line."""
    import subprocess
    import sys

    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    done = subprocess.run([sys.executable, "-m", "protolab.cli", "validate", str(plan)], capture_output=True,
                          text=True, timeout=60)
    if message is None:
        assert done.returncode == 0 and "plan 'x' is valid" in done.stdout, done.stderr
    else:
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            f"protolab: error: {plan}: {message}"], done.stderr


@pytest.mark.parametrize("extra, message", [
    ("", "plan: configurations b: lab:nvme-tcp is served and reached by the kernels of the lab's guests; add a "
         "[hypervisor] table"),
    ('controller = "lsi"\n[hypervisor]\naccel = "tcg"\n', "configuration 'b': controller applies to disks QEMU "
     "attaches; the guest's kernel attaches lab:nvme-tcp itself; remove controller"),
    ('[hypervisor]\naccel = "tcg"\n', None),
])
def test_lab_nvme_tcp_needs_guests_and_takes_no_controller(tmp_path, extra, message):
    check_validate(tmp_path, KERNEL_PLAN + extra, message)


def test_doctor_says_where_each_kernel_path_runs():
    from protolab.doctor import kernel_paths_check
    from protolab.proc import Completed, FakeRunner

    no = Completed(("modinfo",), 1, "", "modinfo: ERROR: Module nvmet-tcp not found.")
    runner = FakeRunner({("modinfo", "-F", "filename"): no})
    c = kernel_paths_check(runner, {"kernel_paths": ["nvme-tcp", "iscsi", "nfs", "smb"]}, "tcg")
    assert c.ok and c.detail == ("iscsi by LIO, smb by Samba, nvme-tcp by nvmet-tcp, nfs by knfsd in TCG guests — "
                                 "TCG figures "
                                 "measure emulation: only comparisons' mechanics mean anything; this host's kernel has "
                                 "iscsi_target_mod no, iscsi_tcp no, nvmet-tcp no, nvme-tcp no, nfsd no, nfsv4 no "
                                 "(protolab runs them in guests)")
    partial = kernel_paths_check(runner, {"kernel_paths": ["nvme-tcp"]}, "tcg")  # no iscsistart in the image
    assert not partial.ok and partial.detail.startswith("nvme-tcp by nvmet-tcp in TCG guests")
    old = kernel_paths_check(FakeRunner(), {}, "kvm")  # an image built before the kernel paths
    assert not old.ok and old.detail.startswith("none in KVM guests; this host's kernel has iscsi_target_mod yes")
    assert "scripts/build-guest.sh" in old.fix


@pytest.mark.parametrize("config, message", [
    ('target = "lab:nfs"\nserver = "lio"\n', "plan: configuration 'b': server 'lio' serves iscsi, not nfs; use one of "
                                            "ganesha, knfsd"),
    ('target = "lab:iscsi"\nserver = "scst"\n', "plan: configuration 'b': server 'scst' is not a lab server; use one of "
                                               "tgt, lio, ganesha, nbdkit, samba, nvmet, knfsd"),
    ('target = "lab:iscsi"\nsessions = 4\n', "plan: configuration 'b': sessions applies to iSCSI logged in by a guest's "
                                            "kernel (server = \"lio\"); remove sessions"),
    ('target = "lab:iscsi"\nserver = "lio"\nsessions = 4\n', "plan: configurations b: lab:iscsi is served and "
     "reached by the kernels of the lab's guests; add a [hypervisor] table"),
    ('target = "lab:iscsi"\nserver = "lio"\nsessions = 4\n[hypervisor]\naccel = "tcg"\n', None),
    ('target = "lab:nfs"\nnfs = { nconnect = 2 }\n', "plan: configuration 'b': nfs applies to NFS mounted by a "
                                                    "guest's kernel (server = \"knfsd\"); remove nfs"),
    ('target = "lab:nfs"\nserver = "knfsd"\nnfs = { version = 3, nconnect = 2, rsize = 65536 }\n[hypervisor]\n'
     'accel = "tcg"\n', None),
    # the guest's disk on the pool's file (QEMU opens it: no wire), a VM study's baseline
    ('target = "lab:local"\n[hypervisor]\naccel = "tcg"\n', None),
    ('target = "/dev/null"\n[hypervisor]\naccel = "tcg"\n', "configuration 'b': target /dev/null cannot be a VM's "
     "disk; with [hypervisor] every target is lab:local, lab:iscsi, lab:nfs, lab:nbd, lab:nvme-tcp or lab:smb"),
])
def test_a_configuration_chooses_its_lab_server_and_kernel_iscsi_sessions(tmp_path, config, message):
    check_validate(tmp_path, KERNEL_PLAN.split('target = "lab:nvme-tcp"\n')[0] + config, message)


def test_a_knfsd_mount_option_out_of_range_is_one_line_naming_its_line_and_field(tmp_path):
    import subprocess
    import sys

    plan = tmp_path / "plan.toml"
    plan.write_text(KERNEL_PLAN.split('target = "lab:nvme-tcp"\n')[0] + 'target = "lab:nfs"\nserver = "knfsd"\n'
                    'nfs = { version = 3, wsize = 5000 }\n[hypervisor]\naccel = "tcg"\n')
    done = subprocess.run([sys.executable, "-m", "protolab.cli", "validate", str(plan)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"protolab: error: {plan}:13: configurations[1].nfs.wsize: wsize 5000: give a power of two from 4096 to "
        "1048576 bytes"], done.stderr


def _vm_testbed(text: str):
    from protolab.plan.load import load_plan_text
    from protolab.proc import FakeRunner
    from protolab.run.vmbed import VmTestbed

    return VmTestbed(load_plan_text(text), None, FakeRunner(), None, Path("/nonexistent"))  # type: ignore[arg-type]


def test_each_kernel_guest_is_granted_by_its_own_name_and_an_access_list_linux_would_cut_is_refused_first():
    few = _vm_testbed(KERNEL_PLAN + '[[configurations]]\nname = "c"\ntarget = "lab:iscsi"\nserver = "lio"\n'
                      '[hypervisor]\naccel = "tcg"\nvms_per_host = 2\n')
    granted = few._granted(Names(few.plan.lab))
    assert granted == {"nvmet": ["nqn.2024-01.org.protolab:pl.h0v0c1", "nqn.2024-01.org.protolab:pl.h0v1c1"],
                       "lio": ["iqn.2024-01.org.protolab:pl.h0v0c2", "iqn.2024-01.org.protolab:pl.h0v1c2"]}
    few._check_server_guest()  # fits
    # knfsd admits addresses: every load guest the plan can boot (3 configurations × 2 VMs), on the admitted host
    nfs = _vm_testbed(KERNEL_PLAN + '[[configurations]]\nname = "c"\ntarget = "lab:nfs"\nserver = "knfsd"\n'
                      '[hypervisor]\naccel = "tcg"\nvms_per_host = 2\n')
    assert nfs._granted(Names(nfs.plan.lab))["knfsd"] == [f"198.18.0.{128 + n}" for n in range(6)]
    nfs._check_server_guest()
    # the server guest's CPU is a kernel path's figure only: it idles through the userspace paths' cells
    by = {c.name: c for c in few.plan.configurations}
    assert few.foreign_fields(by["a"]) == ("server_guest_cpu_s",) and few.foreign_fields(by["b"]) == ()
    many = _vm_testbed(KERNEL_PLAN + "".join(f'[[configurations]]\nname = "n{i}"\ntarget = "lab:nvme-tcp"\n'
                                             for i in range(6)) + '[hypervisor]\naccel = "tcg"\nvms_per_host = 16\n')
    with pytest.raises(ProtolabError, match=r"guest pl-storage-guest: its kernel command line would be \d+ bytes"):
        many._check_server_guest()
