"""The ``[hypervisor]`` section: virtual machines as load hosts (QEMU guests in the lab's host namespaces).

    [hypervisor]
    vms_per_host = 1
    vcpus = 2
    memory = "1G"
    accel = "auto"            # kvm | tcg | auto (KVM when a probe guest boots, TCG otherwise)
    controller = "pvscsi"     # virtio-blk | virtio-scsi | lsi | megasas | pvscsi
    disks_per_vm = 2
    queues = 4                # virtio-scsi / virtio-blk only

Not yet read by ``Plan``: the VM testbed (on the run package's testbed interface) will add
``hypervisor: Hypervisor | None`` to the plan model and use this.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .units import parse_size

CONTROLLER_NAMES = ("virtio-blk", "virtio-scsi", "lsi", "megasas", "pvscsi")
QUEUED = ("virtio-blk", "virtio-scsi")


class Hypervisor(BaseModel):
    """VMs per load host, their size, the accelerator and the virtual disk controller of their data disks."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    vms_per_host: int = Field(1, ge=1, le=16)
    vcpus: int = Field(1, ge=1, le=64)
    memory: str = "512M"
    accel: Literal["kvm", "tcg", "auto"] = "auto"
    controller: Literal["virtio-blk", "virtio-scsi", "lsi", "megasas", "pvscsi"] = "virtio-scsi"
    disks_per_vm: int = Field(1, ge=1, le=8)
    queues: int | None = Field(None, ge=1, le=64)

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str) -> str:
        n = parse_size(v)
        if not 256 * 1024**2 <= n <= 64 * 1024**3:
            raise ValueError(f"memory must be between 256M and 64G per VM, got {v!r}")
        return v

    @model_validator(mode="after")
    def _queues(self) -> "Hypervisor":
        if self.queues is not None and self.controller not in QUEUED:
            raise ValueError(f"queues applies to {' and '.join(QUEUED)} only, not controller {self.controller!r}; "
                             "remove hypervisor.queues")
        return self

    @property
    def memory_mib(self) -> int:
        """Memory per VM in MiB (QEMU's -m)."""
        return parse_size(self.memory) // 1024**2
