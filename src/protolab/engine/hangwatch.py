"""A faulted window's fio that stops answering is stopped, with a record that says so (issue 43).

After tgt is killed and started again, fio 3.33's libiscsi engine sometimes never returns (4 runs of 33,
tests/lab/test_lab_faults.py). The likely cause, read from the sources rather than traced: its ``getevents`` polls
the descriptor it took once at setup with no timeout (``poll(…, -1)``) for the events ``iscsi_which_events`` asks
for, and libiscsi, while it waits to try its reconnect again, asks for none (0: "wait ≥ 100 ms and ask again",
iscsi.h), so nothing ever wakes the job. fio's status thread waits for that job too: no status comes, and fio's
runtime never ends it. Without this watch the window lasted until fio's timeout (its runtime and a minute).

The watch counts from the measured window's start (the warm-up's end): once the window's planned length and
``after_s`` more have passed and fio has not ended, ``check`` (fio.run's ``on_poll``, every poll) raises
``Overdue`` with the reason, which stops fio's process group (engine.fio) and ends the window as fio giving up
does (a ToolError: engine.window's ``keep_failed``). ``after_s`` is the caller's: the fault's duration and a
margin, so that a stall the fault itself makes (a link down's TCP backoff past the window's end) is waited for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from ..errors import ToolError

#: Seconds past a faulted window's planned end, beyond the fault's own duration, before its fio is taken as hung.
HUNG_MARGIN_S = 10.0


class Overdue(ToolError):
    """fio did not end its window: the reason (the record's ``fault.ended_early``)."""


@dataclass
class HangWatch:
    """Says when a window's fio is overdue (``__call__``: the reason, or None); told of the window's start and of
    each status fio writes."""

    duration_s: float
    after_s: float
    clock: Callable[[], float] = time.monotonic
    started: float | None = None
    last_status: float | None = None

    def window_started(self) -> None:
        self.started = self.clock()

    def status(self) -> None:
        self.last_status = self.clock()

    def __call__(self) -> str | None:
        if self.started is None:
            return None
        now = self.clock()
        if now - self.started < self.duration_s + self.after_s:
            return None
        last = ("no status since it started" if self.last_status is None or self.last_status < self.started else
                f"its last status {self.last_status - self.started:.1f} s into it")
        return (f"fio hung: its jobs had not ended {now - self.started:.1f} s into a window of "
                f"{self.duration_s:g} s ({last}); protolab stopped it")

    def check(self) -> None:
        """Raise ``Overdue`` once fio is overdue."""
        why = self()
        if why is not None:
            raise Overdue(why)
