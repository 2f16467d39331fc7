"""A QEMU guest under TCG as a load host: disks over iSCSI, NBD and NFS behind every controller,
fio inside it driven by the host's fio client, the hypervisor's CPU per I/O, traffic on the storage port.

One guest carries all fifteen disks (three protocols × five controllers, each disk on a
controller of its own), so the suite pays for one TCG boot (~10 s), not fifteen.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIO, sh, spec
from protolab.lab.procs import alive
from protolab.proc import SubprocessRunner
from protolab.vm.accel import free_port
from protolab.vm.controllers import CONTROLLERS
from protolab.vm.host import lab_guest, run_cell
from protolab.vm.image import find_image
from protolab.vm.qemu import Disk, Guest, GuestSpec

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_S = 2


def guest_image():
    """The image of $PROTOLAB_GUEST, the worktree's .guest or .deps/guest; skip when none is built."""
    for d in [os.environ.get("PROTOLAB_GUEST"), ROOT / ".guest", ROOT / ".deps" / "guest"]:
        if d and (Path(d) / "guest.json").is_file():
            return find_image(Path(d))
    pytest.skip("no guest image; run scripts/build-guest.sh")


def port_bytes(netns: str, ifname: str) -> int:
    """Bytes received plus sent on ``ifname`` in ``netns``."""
    out = sh(["ip", "-j", "-s", "link", "show", "dev", ifname], netns=netns, check=True).stdout
    stats = json.loads(out)[0]["stats64"]
    return stats["rx"]["bytes"] + stats["tx"]["bytes"]


def jobfile(devices: list[str]) -> str:
    """One random-read job per guest disk, time-based, direct I/O."""
    text = (f"[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=4\n"
            f"time_based=1\nruntime={RUNTIME_S}\nsize=32M\n")
    return text + "".join(f"[{d}]\nfilename=/dev/{d}\n" for d in devices)


@pytest.fixture
def lab(make_lab):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86 (make deps)")
    return make_lab(spec(), {"iscsi", "nfs", "nbd"})


def test_guest_reads_every_protocol_behind_every_controller(lab, tmp_path):
    image = guest_image()
    layout = [(p, c) for p in ("iscsi", "nbd", "nfs") for c in CONTROLLERS]
    guest = lab_guest(lab, image, f"{lab.spec.prefix}-vm0", layout, fio_port=free_port())
    guest.start()
    try:
        devices = guest.wait_ready(timeout=180)
        # three virtio-blk disks (vd*), twelve SCSI disks (sd*)
        assert sorted(d[:2] for d in devices).count("vd") == 3, devices
        assert sorted(d[:2] for d in devices).count("sd") == 12, devices
        comms = {p.read_text().strip() for p in Path(f"/proc/{guest.pid}/task").glob("*/comm")}
        assert "CPU 0/TCG" in comms, comms

        st_ns, st_if = lab.names.storage_ns, lab.names.storage_link(0).near.ifname
        job = tmp_path / "vm.fio"
        job.write_text(jobfile(devices))
        wire_before = port_bytes(st_ns, st_if)
        cell = run_cell(guest, job, str(FIO), timeout=120)
        wire = port_bytes(st_ns, st_if) - wire_before
        assert set(cell.ios) == set(devices)
        assert all(n > 0 for n in cell.ios.values()), cell.ios  # every protocol, every controller
        assert RUNTIME_S * 0.9 <= cell.runtime_s <= RUNTIME_S * 1.5
        ios = sum(cell.ios.values())
        assert cell.iops == pytest.approx(ios / cell.runtime_s) and cell.iops > 0

        spent, figures = cell.hypervisor, cell.cpu_per_io
        assert spent.vcpu_s > 0 and spent.io_s > 0, spent
        assert figures["hv_us_per_io"] == pytest.approx(figures["hv_vcpu_us_per_io"] + figures["hv_io_us_per_io"])
        assert figures["hv_us_per_io"] > 0 and figures["guest_us_per_io"] > 0
        # the disks' data crossed the storage port (plus protocol headers), not a side channel
        assert wire >= ios * 4096, (wire, ios * 4096)
        print(f"\nVM: {cell.iops:.0f} IOPS over {len(devices)} disks, hypervisor "
              f"{figures['hv_us_per_io']:.0f} us/IO (vCPU {figures['hv_vcpu_us_per_io']:.0f}, "
              f"I/O {figures['hv_io_us_per_io']:.0f}), guest {figures['guest_us_per_io']:.0f} us/IO, "
              f"{wire / (ios * 4096):.2f} wire bytes per data byte")
    finally:
        guest.stop()
    assert not alive(guest.pid)
    assert not lab._record.find("process", f"qemu-{lab.spec.prefix}-vm0")


def test_lab_down_stops_a_guest_it_was_never_told_about(make_lab):
    """A guest recorded in the lab's record dies with the lab (a failure or signal ends in lab down)."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86 (make deps)")
    image = guest_image()
    lab = make_lab(spec(), {"nbd"})
    guest = Guest(GuestSpec(f"{lab.spec.prefix}-vm1", image.kernel, image.initrd, accel="tcg",
                            disks=(Disk(lab.endpoint("nbd").url, "pvscsi"),), fio_port=free_port()),
                  SubprocessRunner(), lab._record, lab.names.host_ns(0), lab.workdir / "vm", lab.cgroups)
    guest.start()
    pid = guest.pid
    assert alive(pid) and json.loads((lab.workdir / "lab.json").read_text())["resources"][-1]["extra"]["pid"] == pid
    removed = lab.down()
    assert f"process qemu-{lab.spec.prefix}-vm1 (pid {pid})" in removed
    assert not alive(pid)
