"""LIO in the storage server guest: an iblock backstore on the pool's iSCSI volume, LUN 0, an ACL per initiator
IQN, no CHAP, configured through configfs by the guest's init (scripts/build-guest.sh, pl.lio=)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...errors import ProtolabError
from ...plan.protocols import PROTOCOLS
from ..names import Names
from .kernel import KernelAdapter
from .words import check_endpoint, check_iqn, check_serial

PORT = PROTOCOLS["iscsi"].port


@dataclass(frozen=True)
class LioTarget:
    """What the storage server guest's LIO exports over iSCSI: portal, target IQN, initiators allowed, the disk."""

    address: str
    port: int
    iqn: str
    initiators: tuple[str, ...]
    disk: str = "pl1"

    def kernel_args(self) -> list[str]:
        """The server guest's kernel command line word (see scripts/build-guest.sh)."""
        check_endpoint(self.address, self.port)
        check_serial(self.disk)
        check_iqn(self.iqn, "target IQN")
        if not self.initiators:
            raise ProtolabError("LIO iSCSI: no initiator may log in (no load host is granted the export)")
        initiators = [check_iqn(i, "initiator IQN") for i in self.initiators]
        return [f"pl.lio={self.address},{self.port},{self.iqn},{'+'.join(initiators)},{self.disk}"]


@dataclass(frozen=True)
class LioAdapter(KernelAdapter):
    def target(self, names: Names) -> str | None:
        return names.lio_iqn

    def guest_words(self, names: Names, address: str, admitted: Sequence[str], disk: str | None) -> list[str]:
        return LioTarget(address, PORT, names.lio_iqn, tuple(admitted), disk or "pl1").kernel_args()


ADAPTER = LioAdapter("lio")
