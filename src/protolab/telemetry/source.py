"""A telemetry source: one kind of counter read around the measured window, with one lifecycle.

``start()`` comes before each measured window (after its cell's link is set): a source drops what it read
once for the last window (a link's offload state). ``sample()`` reads the counters at each boundary (and
every second of a client run); ``interpolate(a, b, f)`` gives them a fraction ``f`` of the way from sample
``a`` to ``b`` (a client run's boundaries are placed afterwards, between two samples); ``delta(before,
after)`` gives the fields of ``results.records.Telemetry`` the source owns, JSON-ready. A window
(telemetry.telemetry_window) is a list of sources; each counter's module owns its source (telemetry.cpu, .net,
.cgroups, .priority), and a testbed adds its own (the VM testbed's QEMU threads, vm.telemetry).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

S = TypeVar("S")

#: Fields of a window's Telemetry record, by name, JSON-ready.
Fields = dict[str, Any]


@runtime_checkable
class Source(Protocol[S]):
    """One kind of counter (machine CPU, a role's cgroup, interfaces …) and what a window makes of it."""

    #: unique within a window: a snapshot's readings are found by it
    name: str
    #: read inside a sample's instant (the counters a window's figures are made of, read within milliseconds)
    #: or after it (detail that may take long to read and must not stretch the instant)
    instant: bool = True

    def start(self) -> None:
        """Before a measured window: forget what was read once for the last one."""

    def sample(self) -> S:
        """The counters now."""
        ...

    def interpolate(self, a: S, b: S, f: float) -> S:
        """The counters a fraction ``f`` (0 to 1) of the way from sample ``a`` to sample ``b``."""
        ...

    def delta(self, before: S, after: S) -> Fields:
        """What happened between two samples, as the Telemetry fields this source owns (none: {})."""
        ...


@runtime_checkable
class Carries(Protocol):
    """A source that counts the storage traffic: how a client run's boundaries are placed (engine.window)."""

    def carried(self, sample: Any) -> float | None:
        """Bytes carried so far at ``sample`` (None: nothing counted)."""
        ...


def lerp(a: float, b: float, f: float) -> float:
    """The value a fraction ``f`` of the way from ``a`` to ``b``."""
    return a + (b - a) * f


def lerp_threads(a: dict[str, float], b: dict[str, float], f: float) -> dict[str, float]:
    """Per-thread seconds ('comm#tid') on the line from ``a`` to ``b``, for threads alive at both (a thread that
    ended between them has no line to read)."""
    return {k: lerp(v, b[k], f) for k, v in a.items() if k in b}


def busiest(before: dict[str, float], after: dict[str, float]) -> dict[str, Any] | None:
    """The busiest of some threads ('comm#tid' → CPU seconds so far) between two samples, a thread born between
    them counted from 0: its name, seconds, how many threads and their seconds together (a BusiestThread
    record); None without threads."""
    spent = {k: max(0.0, v - before.get(k, 0.0)) for k, v in after.items()}
    if not spent:
        return None
    top = max(spent, key=lambda k: spent[k])
    return {"thread": top.rsplit("#", 1)[0], "cpu_s": spent[top], "threads": len(spent),
            "live_cpu_s": sum(spent.values())}
