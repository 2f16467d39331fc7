"""Virtual disk controllers a guest's data disks sit behind, as QEMU devices.

The studies compared emulated LSI Logic against paravirtual PVSCSI (TR-3916); QEMU
emulates both, plus MegaRAID SAS and the two virtio controllers. Each name maps to
the controller device and, for SCSI controllers, a ``scsi-hd`` disk on its bus.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProtolabError


@dataclass(frozen=True)
class Controller:
    """A controller: QEMU's device, the guest driver that runs it, and its queue option (if any)."""

    name: str
    device: str  # the QEMU device of the controller (or of the disk itself, for virtio-blk)
    driver: str  # the guest kernel module
    scsi: bool  # disks are scsi-hd on the controller's bus
    queues: str | None = None  # QEMU property for the number of request queues


CONTROLLERS: dict[str, Controller] = {
    "virtio-blk": Controller("virtio-blk", "virtio-blk-pci", "virtio_blk", False, "num-queues"),
    "virtio-scsi": Controller("virtio-scsi", "virtio-scsi-pci", "virtio_scsi", True, "num_queues"),
    "lsi": Controller("lsi", "lsi53c895a", "sym53c8xx", True),
    "megasas": Controller("megasas", "megasas", "megaraid_sas", True),
    "pvscsi": Controller("pvscsi", "pvscsi", "vmw_pvscsi", True),
}


def controller(name: str) -> Controller:
    """The controller called ``name``; ProtolabError naming the choices otherwise."""
    try:
        return CONTROLLERS[name]
    except KeyError:
        raise ProtolabError(
            f"controller {name!r} is not known; use one of {', '.join(CONTROLLERS)}") from None


def device_args(name: str, index: int, node: str, queues: int | None = None) -> list[str]:
    """QEMU ``-device`` arguments attaching block node ``node`` as data disk ``index`` behind ``name``.

    Every disk gets a controller of its own, so disks on different controllers can share a guest.
    """
    c = controller(name)
    q = f",{c.queues}={queues}" if queues and c.queues else ""
    if queues and not c.queues:
        raise ProtolabError(f"controller {name!r} has no queue setting; remove 'queues' or use virtio-scsi/virtio-blk")
    serial = f"pl{index}"
    if not c.scsi:
        return ["-device", f"{c.device},id=disk{index},drive={node},serial={serial}{q}"]
    return ["-device", f"{c.device},id=ctl{index}{q}",
            "-device", f"scsi-hd,bus=ctl{index}.0,drive={node},id=disk{index},serial={serial}"]
