"""A QEMU guest under TCG as a load host: disks over iSCSI, NBD and NFS behind every controller,
fio inside it driven by the host's fio client, the hypervisor's CPU per I/O, traffic on the storage port.

One guest carries all fifteen disks (three protocols × five controllers, each disk on a
controller of its own), so the suite pays for one TCG boot (~10 s), not fifteen.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from protolab.conventions import DATA_FILE
from protolab.lab.procs import alive
from protolab.proc import SubprocessRunner
from protolab.vm import cpu
from protolab.vm.accel import free_port
from protolab.vm.controllers import CONTROLLERS
from protolab.vm.image import find_image
from protolab.vm.qemu import Disk, Guest, GuestSpec

from conftest import FIO, sh, spec

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
    urls = {"iscsi": lab.endpoint("iscsi").url, "nbd": lab.endpoint("nbd").url,
            "nfs": f"{lab.endpoint('nfs').url}/{DATA_FILE}"}
    disks = tuple(Disk(urls[p], c) for p in urls for c in CONTROLLERS)
    host_ns = lab.names.host_ns(0)
    guest = Guest(GuestSpec(f"{lab.spec.prefix}-vm0", image.kernel, image.initrd, accel="tcg",
                            memory_mib=512, disks=disks, fio_port=free_port()),
                  SubprocessRunner(), lab._record, host_ns, lab.workdir / "vm", lab.cgroups)
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
        wire_before, hv_before = port_bytes(st_ns, st_if), cpu.sample(guest.pid)
        done = subprocess.run(["ip", "netns", "exec", host_ns, str(FIO), f"--client={guest.client_arg()}",
                               "--output-format=json", str(job)], capture_output=True, text=True, timeout=120)
        hv_after, wire_after = cpu.sample(guest.pid), port_bytes(st_ns, st_if)
        assert done.returncode == 0, done.stderr[-500:]
        out = json.loads(done.stdout[done.stdout.index("{"):])
        jobs = out["client_stats"] if "client_stats" in out else out["jobs"]
        per_disk = {j["jobname"]: j["read"]["total_ios"] for j in jobs if j["jobname"] in devices}
        assert set(per_disk) == set(devices)
        assert all(n > 0 for n in per_disk.values()), per_disk  # every protocol, every controller
        ios = sum(per_disk.values())
        read_bytes = ios * 4096

        spent = cpu.window(hv_before, hv_after)
        figures = cpu.per_io(spent, ios)
        assert spent.vcpu_s > 0 and spent.io_s > 0, spent
        assert figures["hv_us_per_io"] > 0
        guest_cpu = cpu.guest_per_io(next(j for j in jobs if j["jobname"] == devices[0]), per_disk[devices[0]])
        assert guest_cpu["guest_us_per_io"] > 0
        # the disks' data crossed the storage port (plus protocol headers), not a side channel
        assert wire_after - wire_before >= read_bytes, (wire_after - wire_before, read_bytes)
        print(f"\nVM: {ios / RUNTIME_S:.0f} IOPS over {len(devices)} disks, hypervisor "
              f"{figures['hv_us_per_io']:.0f} us/IO (vCPU {figures['hv_vcpu_us_per_io']:.0f}, "
              f"I/O {figures['hv_io_us_per_io']:.0f}), guest {guest_cpu['guest_us_per_io']:.0f} us/IO, "
              f"{(wire_after - wire_before) / read_bytes:.2f} wire bytes per data byte")
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
