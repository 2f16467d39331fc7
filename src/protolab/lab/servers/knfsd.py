"""knfsd in the storage server guest, with its helpers (rpcbind, exportfs, rpc.mountd, rpc.nfsd): it exports the
ext4 of the pool's knfsd volume (lab.fsvolume) to the load guests' addresses (scripts/build-guest.sh, pl.knfsd=).
A restore goes round the guest: it unmounts the volume first and mounts it again after (VmTestbed.restore)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...errors import ProtolabError
from ..names import Names
from .kernel import KernelAdapter
from .words import check_address, check_serial


def knfsd_words(address: str, clients: Sequence[str], disk: str | None = None) -> list[str]:
    """The server guest's word for knfsd exporting /export to ``clients``, each a lab address: the ext4 on the disk
    with serial ``disk`` (the pool's knfsd volume, lab.fsvolume), or with no disk a tmpfs in the guest."""
    check_address(address)
    if not clients:
        raise ProtolabError("knfsd: no client may mount (no load host is granted the export)")
    for c in clients:
        check_address(c)
    if disk is not None:
        check_serial(disk)
    return [f"pl.knfsd={address},{'+'.join(clients)}{f',{disk}' if disk else ''}"]


@dataclass(frozen=True)
class KnfsdAdapter(KernelAdapter):
    def guest_words(self, names: Names, address: str, admitted: Sequence[str], disk: str | None) -> list[str]:
        return knfsd_words(address, admitted, disk)


ADAPTER = KnfsdAdapter("knfsd", own_volume=True)
