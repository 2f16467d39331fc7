"""The host initiators, one adapter module each (run.hostinit says what one is), by the protocol they attach."""

from __future__ import annotations

from . import attach_iscsi, attach_nfs, attach_nvme, attach_smb
from .hostinit import HostInitiator

HOST_INITIATORS: dict[str, HostInitiator] = {
    i.protocol: i for i in (attach_iscsi.INITIATOR, attach_nfs.INITIATOR, attach_nvme.INITIATOR, attach_smb.INITIATOR)}


def host_initiator(protocol: str) -> HostInitiator:
    """The host initiator of ``protocol`` (plan.attach allows only these)."""
    return HOST_INITIATORS[protocol]
