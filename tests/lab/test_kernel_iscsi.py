"""iSCSI on the kernel data path, across the lab's links: LIO in the storage server guest, the kernel's iscsi_tcp
in a load guest (logged in by iscsistart, two sessions: two SCSI disks), fio on both, the storage port's
counters against the wire model."""

from __future__ import annotations

import shutil

import pytest
from test_kernel_nvme import counters
from test_vm_guest import guest_image

from conftest import FIO, sh, spec
from protolab.analysis.wire import wire_cost
from protolab.lab.procs import alive
from protolab.vm.accel import free_port
from protolab.vm.host import run_cell
from protolab.vm.kernelpaths import load_guest, server_guest

pytestmark = pytest.mark.lab
RUNTIME_S = 3


def test_lio_from_a_load_guest_with_two_sessions_crosses_the_lab_link(make_lab, tmp_path):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86 (make deps)")
    image = guest_image()
    if "iscsi" not in image.info.get("kernel_paths", []):
        pytest.skip("the guest image has no iSCSI initiator (scripts/install-deps.sh fetches iscsistart)")
    lab = make_lab(spec(link={"offloads": False}), {"iscsi"})
    names = lab.names
    server = server_guest(lab, image, iscsi_initiators=[names.initiator_iqn(0)], mtu=1500, fio_port=free_port())
    load = load_guest(lab, image, f"{lab.spec.prefix}-h1vm", 0, "iscsi", sessions=2, fio_port=free_port())
    st_ns, st_if = names.storage_ns, names.storage_link(0).near.ifname
    try:
        server.start()
        server.wait_ready(timeout=180)
        assert f"protolab-guest: lio {names.lio_iqn} on 198.18.0.2:3260" in server.console_text(), \
            server.console_text()[-2000:]
        load.start()
        devices = load.wait_ready(timeout=240)
        console = load.console_text()
        assert f"protolab-guest: iscsi {names.lio_iqn} at 198.18.0.2:3260 sessions 2" in console, console[-2500:]
        disks = sorted(d for d in devices if d.startswith("sd"))
        assert len(disks) == 2, (devices, console[-2500:])

        job = tmp_path / "iscsi.fio"
        job.write_text("[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=4\ntime_based=1\n"
                       f"runtime={RUNTIME_S}\nsize=32M\n" + "".join(f"[{d}]\nfilename=/dev/{d}\n" for d in disks))
        packets0, bytes0 = counters(st_ns, st_if)
        cell = run_cell(load, job, str(FIO), timeout=120)
        packets, wire = (b - a for a, b in zip((packets0, bytes0), counters(st_ns, st_if)))
        assert all(n > 50 for n in cell.ios.values()), cell.ios  # both sessions carried I/O
        ios = sum(cell.ios.values())
        model = wire_cost("iscsi", block_size=4096, read_pct=100, mtu=1500)
        counted = model.counted_bytes_to_host + model.counted_bytes_to_storage
        print(f"\nLIO through the lab link: {cell.iops:.0f} IOPS over {len(disks)} sessions, {packets / ios:.2f} "
              f"frames and {wire / ios:.0f} B per I/O (model {model.frames_low:.2f}-{model.frames_high:.2f} "
              f"frames, {model.frames:.2f} expected, {counted:.0f} B)")
        assert wire / ios == pytest.approx(counted, rel=0.05), (wire / ios, counted)
        assert model.frames_low * 0.95 <= packets / ios <= model.frames_high, \
            (model.frames_low, packets / ios, model.frames_high)
    finally:
        load.stop()
        server.stop()
    for g in (load, server):
        assert g.pid is None or not alive(g.pid)
    assert sh(["ip", "link", "show", "dev", names.tap("st")], netns=st_ns).returncode != 0
