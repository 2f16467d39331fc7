"""The report's section on virtual machines as load hosts: the accelerator and what it means, the CPU split.

The seed's claims (TR-3916's PVSCSI finding) is the study file's `[[seed_findings]]`, rendered
for every built-in study by report.seednote."""

from __future__ import annotations

TCG_MEANING = (
    "Under TCG every guest instruction is translated and run in software on the host, so the hypervisor's "
    "vCPU time per I/O stands for the guest's whole I/O path (driver, interrupts, the controller's register "
    "traffic) at many times its cost on hardware, and it is far above what KVM or ESXi would show. Controllers "
    "can still be compared with one another here — a controller that needs fewer guest instructions and fewer "
    "emulated register accesses per I/O costs less — but the absolute figures, and the size of the gaps, are "
    "not those of a hardware-assisted hypervisor: re-run with accel = \"kvm\" on a machine where KVM works.")
