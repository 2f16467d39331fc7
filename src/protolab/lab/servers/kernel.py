"""What the kernel servers of the storage server guest share: an adapter that starts nothing in the lab (the guest
serves, vm.kernelpaths) and says what the guest's kernel command line gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..names import Names
from .server_adapter import Adapter


@dataclass(frozen=True)
class KernelAdapter(Adapter):
    """A kernel server in the storage server guest (one with ``own_volume`` lets go of it around a restore)."""

    def guest_words(self, names: Names, address: str, admitted: Sequence[str], disk: str | None) -> list[str]:
        """The server guest's kernel command line word exporting disk ``disk`` (a serial; None: a guest tmpfs, for
        a server with ``own_volume``) to ``admitted`` (host NQNs, initiator IQNs or addresses, as its initiators
        present themselves)."""
        raise NotImplementedError
