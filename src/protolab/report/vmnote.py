"""The report's section on virtual machines as load hosts: the accelerator and what it means, the CPU split.

The seed beside the measurement (TR-3916's PVSCSI finding) is the study file's `[[seed_findings]]`, rendered
for every built-in study by report.seednote."""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING

from ..analysis.derived import figures

if TYPE_CHECKING:
    from .model import ReportData

TCG_MEANING = (
    "Under TCG every guest instruction is translated and run in software on the host, so the hypervisor's "
    "vCPU time per I/O stands for the guest's whole I/O path (driver, interrupts, the controller's register "
    "traffic) at many times its cost on hardware, and it is far above what KVM or ESXi would show. Controllers "
    "can still be compared with one another here — a controller that needs fewer guest instructions and fewer "
    "emulated register accesses per I/O costs less — but the absolute figures, and the size of the gaps, are "
    "not those of a hardware-assisted hypervisor: re-run with accel = \"kvm\" on a machine where KVM works.")


def vm_lines(data: ReportData) -> list[str]:
    """Markdown lines: how the VMs ran, and the hypervisor's CPU per I/O split into vCPU and I/O threads."""
    tb = data.manifest.get("testbed") or {}
    hv = tb.get("hypervisor")
    if tb.get("kind") != "vm" or not hv:
        return []
    out = ["", "## Virtual machines as load hosts", "",
           f"{hv.get('vms_per_host')} VM(s) per load host, {hv.get('vcpus')} vCPU, {hv.get('memory')}, "
           f"{hv.get('disks_per_vm')} data disk(s) each, opened by QEMU itself from the host's namespace. "
           f"Accelerator: **{hv.get('accel')}** (asked: {hv.get('accel_wanted')}; {hv.get('accel_reason')})."]
    if hv.get("accel") == "tcg":
        out += ["", TCG_MEANING]
    rows = []
    for c in data.configurations:
        recs = [r for r in data.records if r.configuration == c]
        f = [figures(r) for r in recs]
        vals = [(x.cpu_us_per_io_hv_vcpu, x.cpu_us_per_io_hv_io, x.cpu_us_per_io_guest) for x in f
                if x.cpu_us_per_io_hv_vcpu is not None]
        if vals:
            rows.append(f"| {c} | {median(v[0] for v in vals):,.1f} | {median(v[1] for v in vals):,.1f} | "
                        f"{median(v[2] or 0 for v in vals):,.1f} |")
    if rows:
        out += ["", "Hypervisor CPU per I/O by QEMU thread (medians over every window; µs): vCPU threads run the "
                "guest, I/O threads emulate the controller and run the storage initiator.", "",
                "| configuration | vCPU µs/IO | I/O threads µs/IO | guest's own µs/IO |", "|---|---:|---:|---:|", *rows]
    return out
