"""The embedded lab: namespaces, switch, shaped links, a btrfs pool, iSCSI/NFS/NBD servers.

Names are loaded on first use (PEP 562), so that `protolab --help` registers the `lab`
commands without building the plan models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .lab import Endpoint, Lab, default_workdir
    from .teardown import down_all

__all__ = ["Endpoint", "Lab", "default_workdir", "down_all"]


def __getattr__(name: str) -> Any:
    if name in ("Endpoint", "Lab", "default_workdir"):
        from . import lab

        return getattr(lab, name)
    if name == "down_all":
        from .teardown import down_all

        return down_all
    raise AttributeError(f"module 'protolab.lab' has no attribute {name!r}")
