"""The lab's storage servers, one adapter module each (lab.servers.server_adapter says what an adapter is), by the name
plan.servers gives them. The lab, the storage server guest and the report's Environment ask this registry."""

from __future__ import annotations

from . import ganesha, knfsd, lio, nbdkit, nvmet, samba, tgt
from .kernel import KernelAdapter
from .server_adapter import UNDESCRIBED, Adapter, Serving

__all__ = ["ADAPTERS", "Adapter", "KernelAdapter", "Serving", "adapter", "kernel_adapters", "path_caches"]

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (
    tgt.ADAPTER, ganesha.ADAPTER, nbdkit.ADAPTER, samba.ADAPTER,
    # the storage server guest's kernel servers, in the order of its disks (serials pl0, pl1, …)
    nvmet.ADAPTER, lio.ADAPTER, knfsd.ADAPTER)}

#: a path with no server: fio opens the pool's file itself
DIRECT = "none: fio opens the pool's file with direct I/O (a configuration's direct = true, the default)"


def adapter(name: str | None) -> Adapter | None:
    """The adapter of server ``name`` (None for no server, lab:local's path)."""
    return ADAPTERS.get(name or "")


def kernel_adapters() -> list[KernelAdapter]:
    """The storage server guest's servers, in the order of its disks."""
    return [a for a in ADAPTERS.values() if isinstance(a, KernelAdapter)]


def path_caches(servers: dict[str, str | None], write_back: bool = False) -> dict[str, str]:
    """The cache each path had above the device model, by protocol (``servers``: protocol → its server;
    ``write_back``: the model acknowledges writes from a write-back cache)."""
    out = {}
    for protocol, server in servers.items():
        a = adapter(server)
        out[protocol] = DIRECT if server is None else UNDESCRIBED if a is None else \
            a.cache + (a.write_back if write_back else "")
    return out
