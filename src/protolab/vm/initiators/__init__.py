"""The load guests' kernel initiators, one adapter module each (vm.initiators.initiator_adapter says what one is), by
the protocol they attach. The VM testbed and the guests ask this registry."""

from __future__ import annotations

from . import cifs, iscsi, nfs, nvme
from .initiator_adapter import MOUNT, Attachment, Initiator

__all__ = ["INITIATORS", "MOUNT", "Attachment", "Initiator", "initiator"]

INITIATORS: dict[str, Initiator] = {i.protocol: i for i in (
    nvme.INITIATOR, iscsi.INITIATOR, nfs.INITIATOR, cifs.INITIATOR)}


def initiator(protocol: str | None) -> Initiator | None:
    """The kernel initiator of ``protocol`` (None when a guest's kernel cannot attach it)."""
    return INITIATORS.get(protocol or "")
