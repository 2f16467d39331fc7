"""The QEMU adapter's command line, the controllers, the accelerator choice and the thread CPU split."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.vm import accel, hypervisor_cpu
from protolab.vm.controllers import CONTROLLERS, device_args
from protolab.vm.image import GuestImage, find_image
from protolab.vm.qemu import Disk, GuestSpec


def spec(**kw) -> GuestSpec:
    base = dict(name="vm0", kernel=Path("/k"), initrd=Path("/i"), fio_port=20001)
    base.update(kw)
    return GuestSpec(**base)


def test_every_controller_maps_to_its_qemu_device():
    assert device_args("virtio-blk", 0, "d0") == ["-device", "virtio-blk-pci,id=disk0,drive=d0,serial=pl0"]
    for name, dev in [("virtio-scsi", "virtio-scsi-pci"), ("lsi", "lsi53c895a"), ("megasas", "megasas"),
                      ("pvscsi", "pvscsi")]:
        assert device_args(name, 2, "d2") == ["-device", f"{dev},id=ctl2",
                                              "-device", "scsi-hd,bus=ctl2.0,drive=d2,id=disk2,serial=pl2"]
    assert device_args("virtio-scsi", 1, "d1", queues=4)[1] == "virtio-scsi-pci,id=ctl1,num_queues=4"
    assert device_args("virtio-blk", 1, "d1", queues=2)[1].endswith(",num-queues=2")
    with pytest.raises(ProtolabError, match="'lsi' has no queue setting"):
        device_args("lsi", 0, "d0", queues=2)
    with pytest.raises(ProtolabError, match="controller 'buslogic' is not known; use one of virtio-blk"):
        Disk("iscsi://198.18.0.1:3260/iqn.x/1", "buslogic")
    with pytest.raises(ProtolabError, match="QEMU attaches iscsi, nfs, nbd URLs or a local file only"):
        Disk("ftp://198.18.0.1/x", "lsi")


def test_command_line_disks_accel_and_control_forward(tmp_path):
    disks = (Disk("iscsi://198.18.0.1:3260/iqn.x/1", "lsi"), Disk("nfs://198.18.0.1/p/fio-data", "pvscsi"))
    argv = spec(vcpus=2, memory_mib=768, disks=disks).argv(tmp_path / "pid", tmp_path / "con")
    joined = " ".join(argv)
    assert argv[0] == "qemu-system-x86_64" and "-accel tcg -cpu max -smp 2 -m 768" in joined
    assert "vm0,debug-threads=on" in argv  # thread names for the CPU split
    assert f"-pidfile {tmp_path / 'pid'}" in joined and f"file:{tmp_path / 'con'}" in argv
    assert "user,id=ctl,restrict=on,hostfwd=tcp:127.0.0.1:20001-:8765" in argv  # control off the lab links
    assert "if=none,id=d0,format=raw,cache=none,file=iscsi://198.18.0.1:3260/iqn.x/1" in argv
    assert "lsi53c895a,id=ctl0" in argv and "pvscsi,id=ctl1" in argv
    assert "-cpu host" in " ".join(spec(accel="kvm").argv(tmp_path / "p", tmp_path / "c"))
    with pytest.raises(ProtolabError, match="accelerator 'auto' is not kvm or tcg"):
        spec(accel="auto").argv(tmp_path / "p", tmp_path / "c")


def test_accel_choice_and_reasons(tmp_path, monkeypatch):
    img = GuestImage(tmp_path, tmp_path / "k", tmp_path / "i", {})
    assert accel.choose("tcg", None, img) == accel.AccelChoice("tcg", 'asked for (hypervisor.accel = "tcg")')
    monkeypatch.setattr(accel, "probe_kvm", lambda runner, image, timeout: "no /dev/kvm")
    assert accel.choose("auto", None, img) == accel.AccelChoice("tcg", "KVM unusable: no /dev/kvm")
    with pytest.raises(ProtolabError, match='hypervisor.accel = "kvm" but KVM does not work here: no /dev/kvm'):
        accel.choose("kvm", None, img)
    monkeypatch.setattr(accel, "probe_kvm", lambda runner, image, timeout: None)
    assert accel.choose("auto", None, img).accel == "kvm"
    with pytest.raises(ProtolabError, match="'xen' is not one of kvm, tcg, auto"):
        accel.choose("xen", None, img)


def fake_proc(root: Path, pid: int, threads: dict[int, tuple[str, int, int]]) -> None:
    for tid, (comm, utime, stime) in threads.items():
        d = root / str(pid) / "task" / str(tid)
        d.mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
        rest = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 30
        (d / "stat").write_text(f"{tid} ({comm}) " + " ".join(rest))


def test_thread_cpu_split_into_vcpu_and_io(tmp_path):
    t = os.sysconf("SC_CLK_TCK")
    fake_proc(tmp_path / "a", 7, {7: ("qemu-system-x86", t, 0), 8: ("CPU 0/TCG", 2 * t, t), 9: ("worker", 0, t)})
    fake_proc(tmp_path / "b", 7, {7: ("qemu-system-x86", 2 * t, 0), 8: ("CPU 0/TCG", 4 * t, 2 * t),
                                   9: ("worker", 0, 2 * t), 10: ("CPU 1/TCG", t, 0)})
    before, after = hypervisor_cpu.sample(7, tmp_path / "a"), hypervisor_cpu.sample(7, tmp_path / "b")
    assert (before.vcpu_s, before.io_s) == (3.0, 2.0)
    spent = hypervisor_cpu.window(before, after)
    assert (spent.vcpu_s, spent.io_s) == (4.0, 2.0)  # a new vCPU thread counts from zero
    assert hypervisor_cpu.per_io(spent, 2000) == {"hv_vcpu_us_per_io": 2000.0, "hv_io_us_per_io": 1000.0,
                                       "hv_us_per_io": 3000.0}
    assert hypervisor_cpu.per_io(spent, 0) == {}
    assert hypervisor_cpu.guest_per_io({"job_runtime": 2000, "usr_cpu": 10.0, "sys_cpu": 40.0}, 1000) == \
        {"guest_us_per_io": 1000.0}
    assert hypervisor_cpu.is_vcpu("CPU 3/KVM") and not hypervisor_cpu.is_vcpu("CPUfreq")


def test_missing_guest_image_says_how_to_build(tmp_path):
    with pytest.raises(ProtolabError, match=f"no guest image in {tmp_path}; run 'scripts/build-guest.sh"):
        find_image(tmp_path)


def test_doctor_reports_qemu_and_a_missing_guest_image(tmp_path, monkeypatch):
    import shutil

    from protolab.doctor import vm_checks
    from protolab.proc import SubprocessRunner
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86")
    monkeypatch.setenv("PROTOLAB_GUEST", str(tmp_path))
    checks = {c.item: c for c in vm_checks(SubprocessRunner())}
    assert checks["qemu"].ok and checks["qemu"].detail.startswith("QEMU emulator version ")
    assert not checks["guest image"].ok and checks["guest image"].detail == f"no guest image in {tmp_path}"
    assert checks["accelerator"].detail == "not probed without a guest image"


def test_hypervisor_section_validates_controller_queues_and_memory():
    from pydantic import ValidationError

    from protolab.plan.hypervisor import CONTROLLER_NAMES, Hypervisor
    assert CONTROLLER_NAMES == tuple(CONTROLLERS)  # the plan offers exactly the adapter's controllers
    h = Hypervisor(controller="pvscsi", memory="1G", disks_per_vm=2)
    assert (h.memory_mib, h.accel, h.vms_per_host) == (1024, "auto", 1)
    assert Hypervisor(controller="virtio-scsi", queues=4).queues == 4
    with pytest.raises(ValidationError, match="queues applies to virtio-blk and virtio-scsi only, not controller 'lsi'"):
        Hypervisor(controller="lsi", queues=2)
    with pytest.raises(ValidationError, match="controller"):
        Hypervisor(controller="buslogic")
    with pytest.raises(ValidationError, match="memory must be between 256M and 64G per VM"):
        Hypervisor(memory="64M")
    with pytest.raises(ValidationError, match="accel"):
        Hypervisor(accel="xen")
