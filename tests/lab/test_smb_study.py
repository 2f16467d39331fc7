"""SMB3 through protolab's run: a [hypervisor] plan whose configuration is lab:smb — Samba in the storage namespace
(lab.servers.samba) over the pool's device model, the load guest's kernel CIFS client (vm.initiators.cifs) — measured
like every other path: IOPS and latency, smbd's CPU per I/O, the storage port's frames and bytes per I/O as the SMB
wire model says (analysis.wire_smb; its frames against a capture: tests/lab/test_cifs_guest.py)."""

from __future__ import annotations

import csv
import shutil

import pytest

from protolab.analysis.wire import wire_cost

pytestmark = pytest.mark.lab


def test_a_vm_plan_measures_smb_by_the_guests_cifs_client_over_the_device_model(tmp_path):
    from test_study import PREFIX
    from test_vm_guest import guest_image
    from test_vm_study import qemus, vm_plan

    from conftest import leftovers, workdir_for
    from protolab.analysis.derived import figures
    from protolab.plan.load import load_plan_text
    from protolab.run import Study

    if shutil.which("qemu-system-x86_64") is None or shutil.which("smbd") is None:
        pytest.skip("needs qemu-system-x86 and samba (make deps)")
    image = guest_image()
    if "smb" not in (image.info.get("kernel_paths") or []):
        pytest.fail("the guest image has no CIFS client: run scripts/install-deps.sh again")
    # the flash model: 150 µs ± 50 µs a request, faster than Samba's 500 µs before an interim response
    text = vm_plan([("smb", "smb", "")]).replace("[lab.link]\n", '[lab.storage]\nmodel = "flash"\n[lab.link]\n')
    try:
        rundir = Study(load_plan_text(text), text, "vm", results_root=tmp_path / "r",
                       lab_workdir=workdir_for("smb-study")).run()
    finally:
        assert qemus() == [] and leftovers(PREFIX) == []
    [r] = rundir.records()
    f = figures(r)
    assert r.result.iops > 0 and r.result.errors == 0 and r.result.percentiles_us.get("p99", 0) > 0
    assert f.cpu_us_per_io_server > 0 and f.cpu_us_per_io_hypervisor > 0, f  # smbd, and the guest's QEMU
    assert f.packets_counted_as == "frames" and f.packets_per_io > 0
    # tr3916-oltp: 8 KiB, 60 % reads; the storage port's traffic as the model says: bytes within 3 %, frames between
    # the fully merged stream and RFC 1122's ACKs, and within 10 % of the model's Linux figure
    model = wire_cost("smb", block_size=8192, read_pct=60, mtu=1500)
    assert f.wire_bytes_per_io == pytest.approx(model.counted_bytes_to_host + model.counted_bytes_to_storage,
                                                rel=0.03), f.wire_bytes_per_io
    assert model.frames_low * 0.95 <= f.packets_per_io <= model.frames_high * 1.05, (model, f.packets_per_io)
    frames = model.frames_to_storage + model.frames_to_host
    assert f.packets_per_io == pytest.approx(frames, rel=0.10), (frames, f.packets_per_io)
    print(f"\nsmb: {r.result.iops:.0f} IOPS, smbd {f.cpu_us_per_io_server:.0f} µs CPU per I/O, "
          f"{f.packets_per_io:.2f} frames per I/O (model {frames:.2f}), {f.wire_bytes_per_io:.0f} B per I/O")
    m = rundir.manifest()
    assert "SMB3 by the guest's kernel" in m.targets["smb"] and "Samba" in m.targets["smb"], m.targets
    console = (rundir.path / "lab-logs" / f"{PREFIX}-smb-h1-vm1.console.log").read_text()
    assert "protolab-guest: smb //198.18.0.1/protolab on /mnt/pl vers=3.1.1,cache=none" in console, console[-1500:]
    from protolab.report.report_cli import write_report

    write_report(rundir, figures=False)  # cells.csv's place columns come from the plan
    [row] = list(csv.DictReader((rundir.path / "cells.csv").open()))
    assert (row["protocol"], row["controller"], row["device_model"]) == ("smb", "", "flash"), row
    assert float(row["packets_per_io"]) > 0 and float(row["cpu_us_per_io_server"]) > 0
    md = (rundir.path / "report.md").read_text()
    assert "smb: smb by Samba" in md and "Accelerator: **tcg**" in md, md[:3000]
