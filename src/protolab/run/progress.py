"""What a session tells whoever shows progress (the CLI's bar, or nothing)."""

from __future__ import annotations

from typing import Any, Protocol

from ..plan.expand import Cell


class Progress(Protocol):
    """Callbacks of a running session."""

    def start(self, total: int, seconds_per_cell: float) -> None: ...
    def cell(self, index: int, cell: Cell) -> None: ...
    def iops(self, value: float) -> None: ...
    def done(self, record: Any) -> None: ...
    def note(self, message: str) -> None: ...


class Silent:
    """Progress that shows nothing."""

    def start(self, total, seconds_per_cell): pass
    def cell(self, index, cell): pass
    def iops(self, value): pass
    def done(self, record): pass
    def note(self, message): pass
