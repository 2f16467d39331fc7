"""A telemetry source: one more kind of counter read around the measured window, with one lifecycle.

A window samples its own counters (machine, servers, roles, interfaces) and every source it is given, before
and after the measured run (and at fio's status instants when a client run's boundaries are found later):
``sample()`` reads the source's counters now, ``interpolate(a, b, f)`` gives them at fraction ``f`` of the way
from sample ``a`` to sample ``b``, and ``delta(a, b)`` what happened between two samples, as entries of the
window's telemetry (results.records.Telemetry). The QEMU guests' threads (vm.telemetry) are one.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Source(Protocol):
    """One kind of counter around a window (see the module's text)."""

    name: str

    def sample(self) -> Any:
        """The source's counters now."""

    def interpolate(self, a: Any, b: Any, f: float) -> Any:
        """The counters at fraction ``f`` (0–1) of the way from sample ``a`` to sample ``b``."""

    def delta(self, a: Any, b: Any) -> dict[str, Any]:
        """What happened between samples ``a`` and ``b``: entries of the window's telemetry."""
