"""SMB3 end to end, by hand (the registries that make `lab:smb` a plan's target come later): a TCG load guest's kernel
CIFS client mounts Samba's share (lab.servers.samba, in the storage namespace) over the lab's link, and fio in the guest
reads /mnt/pl/protolab.dat; the storage port's capture and counters give frames per I/O against the SMB wire model
(analysis.wire_smb), within 5 % (8.045 and 9.013 captured against 8.018 and 9.023 modelled, 2026-12-07; at MTU 9000,
by hand, 2.007 against 2.000); IOPS and smbd's CPU per I/O are printed. The lab's link has offloads off: every
packet a frame. One I/O at a time, so that no message of one I/O shares a segment with another's.

Over the RAM pool and over a 2 ms device model (smbd with the direct-I/O shim, as a lab with a model runs it): there,
every READ outlasts Samba's 500 µs and has an interim response, which the model counts as "smb-slow".
"""

from __future__ import annotations

import os
import shutil

import pytest
from test_kernel_nvme import capture_around, captured
from test_samba_lab import Served
from test_vm_guest import guest_image

from conftest import FIO, family_prefix, lab_workdir
from protolab.analysis.wire_smb import interim
from protolab.lab import Lab
from protolab.lab.device import find_blockdev, fuse_available, ganesha_preload
from protolab.lab.names import SUBNET_PREFIXLEN
from protolab.lab.servers.samba import SMB_PORT, password
from protolab.plan.topology import LabSpec
from protolab.proc import SubprocessRunner
from protolab.telemetry.cpu import tree_cpu_seconds
from protolab.vm.accel import free_port
from protolab.vm.guestnet import DataNic
from protolab.vm.host import run_cell
from protolab.vm.initiators.cifs import CifsClient
from protolab.vm.qemu import Guest, GuestSpec

pytestmark = pytest.mark.lab
PREFIX = family_prefix("c")
RUNTIME_S = 4
BS = 8192


@pytest.fixture
def workdir(request):
    for tool in ("qemu-system-x86_64", "smbd", "tcpdump"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (scripts/install-deps.sh)")
    yield from lab_workdir(PREFIX, f"cifs-{request.node.name[:30]}")


def load_guest(lab: Lab, served: Served, image, client: CifsClient) -> Guest:
    """Host 0's load guest on the lab's link (as vm.kernelpaths.load_guest places one), with the pl.smb word."""
    names = lab.names
    nic = DataNic(names.host_ns(0), names.tap("g0"), names.load_guest_address(0, 0), SUBNET_PREFIXLEN, lab.link.mtu,
                  names.host_link(0, 0).near.ifname, index=16)
    spec = GuestSpec(f"{PREFIX}-smb-h1-vm1", image.kernel, image.initrd, accel="tcg", fio_port=free_port(), nic=nic,
                     append=tuple(client.kernel_args()))
    return Guest(spec, SubprocessRunner(), served.record, names.host_ns(0), served.home / "vm")


@pytest.mark.parametrize("storage", [None, {"service_time": "2ms", "parallelism": 16}], ids=["ram", "2ms"])
def test_a_tcg_guest_reads_sambas_share_over_cifs_with_the_wire_models_frames(workdir, tmp_path, smb_wire, storage):
    image = guest_image()
    if "smb" not in image.info.get("kernel_paths", []):
        pytest.skip("the guest image has no CIFS client; rebuild it (scripts/build-guest.sh)")
    if storage is not None and (not fuse_available() or find_blockdev()[0] is None):
        pytest.skip("the device model needs FUSE and protolab-blockdev ('make deps')")
    spec = LabSpec.model_validate(dict(prefix=PREFIX, pool_size="1G", export_size="64M",
                                       link={"rate": "1GbE", "offloads": False}, storage=storage))
    lab = Lab(spec, {"local"}, workdir)
    lab.up()
    guest = served = None
    try:
        modelled = not spec.device.is_ram
        # the region fio reads, written: btrfs answers reads of a preallocated file's unwritten extents with zeros,
        # never asking the device model (protolab's runs prepare the file so; 32 MiB of the host's here)
        data = lab.export_file("local")
        with open(data, "r+b") as f:
            f.write(os.urandom(32 << 20))
            os.fsync(f.fileno())
        served = Served(lab, [lab.names.load_guest_address(0, 0)], ganesha_preload(spec.device), modelled)
        secret = password(served.home)
        client = CifsClient(lab.names.storage_address(0), "protolab", "protolab", secret)
        guest = load_guest(lab, served, image, client)
        guest.start()
        guest.wait_ready(timeout=300)
        console = guest.console_text()
        assert client.console_line + "\n" in console, console[-1500:]
        assert secret not in console  # the console log is kept in run directories
        st_ns, st_if = lab.names.storage_ns, lab.names.storage_link(0).near.ifname
        job = tmp_path / "smb.fio"
        job.write_text(f"[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs={BS}\niodepth=1\ntime_based=1\n"
                       f"runtime={RUNTIME_S}\nsize=32M\n[smb]\nfilename={client.data_file}\n")
        pcap = tmp_path / "port.pcap"
        cpu = [tree_cpu_seconds(served.pid)]

        def measured():
            done = run_cell(guest, job, str(FIO), timeout=180)
            cpu.append(tree_cpu_seconds(served.pid))
            return done

        cell, packets, wire = capture_around(st_ns, st_if, pcap, SMB_PORT, measured)
        cpu0, cpu1 = cpu
        ios = sum(cell.ios.values())
        assert ios > 100, cell.ios
        frames, nbytes = captured(pcap)
        slow = modelled and interim(spec.device.service_us)
        model = smb_wire.wire_cost("smb-slow" if slow else "smb", block_size=BS, read_pct=100, mtu=lab.link.mtu)
        counted = model.counted_bytes_to_host + model.counted_bytes_to_storage
        print(f"\nSMB 3.1.1 over {spec.device.name}, 8 KiB random reads at 1 OIO by a TCG guest's CIFS client: "
              f"{cell.iops:.0f} IOPS, "
              f"smbd {(cpu1 - cpu0) / ios * 1e6:.0f} µs CPU per I/O; capture {frames / ios:.3f} frames and "
              f"{nbytes / ios:.1f} B per I/O, counters {packets / ios:.3f} and {wire / ios:.1f}; model "
              f"{model.frames:.3f} frames ({model.frames_low:g}-{model.frames_high:g}), {counted:.1f} B")
        # the capture holds the counters' window and a little more (it starts before and stops after)
        assert packets <= frames <= packets * 1.02 and wire <= nbytes <= wire * 1.02, (packets, frames, wire, nbytes)
        assert wire / ios == pytest.approx(counted, rel=0.025), (wire / ios, counted)
        assert packets / ios == pytest.approx(model.frames, rel=0.05), (packets / ios, model.frames)
        assert cpu1 > cpu0
    finally:
        if guest is not None:
            guest.stop()
        if served is not None:
            served.down()
        lab.down()
