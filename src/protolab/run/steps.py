"""Teardown steps that all run, whatever one of them does."""

from __future__ import annotations

from typing import Callable

from ..errors import ProtolabError, ToolError


def every_step(steps: list[Callable[[], object]]) -> None:
    """Run every teardown step; a step that fails (a process stuck past SIGKILL, a busy mount) does not stop the
    ones after it. ToolError naming every failure at the end."""
    failed = []
    for step in steps:
        try:
            step()
        except Exception as e:
            failed.append(f"{type(e).__name__}: {e}" if not isinstance(e, ProtolabError) else str(e))
    if failed:
        raise ToolError("teardown: " + "; ".join(failed) + "; run 'protolab lab down --all' if the lab is left")
