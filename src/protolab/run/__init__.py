"""Running a study: testbeds, the procedure built from [method], the session (cell loop, resume, signals).

`Study` and `make_testbed` load on first use: `resume` and `detach` read a run directory (run.resume,
run.attachments) without numpy and scipy, and refuse a bad one in a quarter of a second."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session import Study, make_testbed  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in ("Study", "make_testbed"):
        from . import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
