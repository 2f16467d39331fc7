"""Virtual machines as load hosts: how the guests ran (the accelerator, and what TCG means for the figures) and
the hypervisor's CPU per I/O split into vCPU and I/O threads.

The seed's claims (TR-3916's PVSCSI finding) is the study file's `[[seed_findings]]`, rendered for
every built-in study by report.sections.seed_section."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from markupsafe import Markup, escape

from ..report_data import ReportData
from .section import Page, Section

TCG_MEANING = (
    "Under TCG every guest instruction is translated and run in software on the host, so the hypervisor's "
    "vCPU time per I/O stands for the guest's whole I/O path (driver, interrupts, the controller's register "
    "traffic) at many times its cost on hardware, and it is far above what KVM or ESXi would show. Controllers "
    "can still be compared with one another here — a controller that needs fewer guest instructions and fewer "
    "emulated register accesses per I/O costs less — but the absolute figures, and the size of the gaps, are "
    "not those of a hardware-assisted hypervisor: re-run with accel = \"kvm\" on a machine where KVM works.")
SPLIT = ("Hypervisor CPU per I/O by QEMU thread (medians over every window; µs): vCPU threads run the guest, I/O "
         "threads emulate the controller and run the storage initiator.")


@dataclass(frozen=True)
class VmModel:
    guests: str  # how many, how big, and the accelerator, in one sentence
    tcg: bool
    rows: list[tuple[str, float, float, float]]  # configuration, vCPU, I/O threads, guest µs/IO


class VmSection(Section[VmModel]):
    name = "vms"
    title = "Virtual machines as load hosts"
    nav = "virtual machines as load hosts"

    def build(self, data: ReportData) -> VmModel | None:
        tb: dict[str, Any] = data.manifest.testbed or {}
        hv = tb.get("hypervisor")
        if tb.get("kind") != "vm" or not hv:
            return None
        guests = (f"{hv.get('vms_per_host')} VM(s) per load host, {hv.get('vcpus')} vCPU, {hv.get('memory')}, "
                  f"{hv.get('disks_per_vm')} data disk(s) each, opened by QEMU itself from the host's namespace. "
                  f"Accelerator: **{hv.get('accel')}** (asked: {hv.get('accel_wanted')}; {hv.get('accel_reason')}).")
        kernel = hv.get("kernel_paths") or {}
        if kernel:
            guests += (f" Kernel data paths ({', '.join(f'{c}: {p}' for c, p in kernel.items())}): no virtual disk; "
                       "each load guest's kernel attaches the export over a data NIC on the lab's links, served by "
                       "a storage server guest in the storage namespace (its kernel's target, the pool's volume as "
                       "its disk; its QEMU's CPU counts as the storage server's).")
        rows = []
        for c in data.configurations:
            f = data.figures.get(c, [])
            vals = [(x.cpu_us_per_io_hv_vcpu, x.cpu_us_per_io_hv_io, x.cpu_us_per_io_guest) for x in f
                    if x.cpu_us_per_io_hv_vcpu is not None]
            if vals:
                rows.append((c, median(v[0] for v in vals), median(v[1] for v in vals),
                             median(v[2] or 0 for v in vals)))
        return VmModel(guests, hv.get("accel") == "tcg", rows)

    def markdown(self, m: VmModel) -> list[str]:
        out = ["", f"## {self.title}", "", m.guests]
        if m.tcg:
            out += ["", TCG_MEANING]
        if m.rows:
            out += ["", SPLIT, "", "| configuration | vCPU µs/IO | I/O threads µs/IO | guest's own µs/IO |",
                    "|---|---:|---:|---:|", *(f"| {c} | {a:,.1f} | {b:,.1f} | {g:,.1f} |" for c, a, b, g in m.rows)]
        return out

    def html(self, m: VmModel, page: Page) -> Markup:
        guests = escape(m.guests).replace("**", "")
        tcg = f'<p class="note">{escape(TCG_MEANING)}</p>' if m.tcg else ""
        table = ""
        if m.rows:
            body = "".join(f'<tr><td>{escape(c)}</td><td class="num">{a:,.1f}</td><td class="num">{b:,.1f}</td>'
                           f'<td class="num">{g:,.1f}</td></tr>' for c, a, b, g in m.rows)
            table = (f"<p>{escape(SPLIT)}</p>\n<table><tr><th>configuration</th><th>vCPU µs/IO</th>"
                     f"<th>I/O threads µs/IO</th><th>guest's own µs/IO</th></tr>{body}</table>")
        return Markup(f'<section id="vms">\n<h2>{self.title}</h2>\n<p>{guests}</p>\n{tcg}\n{table}\n</section>')
