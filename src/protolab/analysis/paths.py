"""Multipath: how a cell's traffic spread over the storage ports (its paths), from the records' interface counters.

Each record's telemetry counts bytes (both directions) on every storage port (`analysis.derived`'s
``bytes_by_port``); a cell's share per port pools its repeats' bytes. A port that carried no byte in any repeat
is no path of that cell (a configuration pinned to one NIC of a four-port lab used one path).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..results.records import CellRecord
from .derived import figures


@dataclass(frozen=True)
class PathShare:
    """A cell's bytes per storage port, pooled over its repeats."""

    ports: tuple[str, ...]  # the storage ports that carried bytes, in the testbed's order ('netns/ifname')
    shares: tuple[float, ...]  # each one's fraction of the cell's bytes on the storage ports
    of_ports: int  # the storage ports the testbed had

    @property
    def paths(self) -> int:
        """How many ports carried the cell's traffic."""
        return len(self.ports)

    def label(self) -> str:
        """'4 paths: 25/25/25/25 % of bytes' (whole per cent, port order); '1 path' (of more ports: '1 of 4
        ports')."""
        if self.paths == 1:
            return "1 path" + (f" (1 of {self.of_ports} ports)" if self.of_ports > 1 else "")
        return f"{self.paths} paths: " + "/".join(f"{100 * s:.0f}" for s in self.shares) + " % of bytes"


def path_share(records: Iterable[CellRecord]) -> PathShare | None:
    """The cell's share of bytes per storage port over all its ``records`` (its repeats); None when its storage
    ports carried nothing (a local target) or the records have no interface counters."""
    totals: dict[str, int] = {}
    for r in records:
        for port, n in figures(r).bytes_by_port.items():
            totals[port] = totals.get(port, 0) + n
    wire = sum(totals.values())
    if not wire:
        return None
    used = [p for p, n in totals.items() if n > 0]
    return PathShare(tuple(used), tuple(totals[p] / wire for p in used), len(totals))
