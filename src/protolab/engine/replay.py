"""Trace replay: each stream's copy of the plan's trace, written as a fio iolog next to its job file."""

from __future__ import annotations

from pathlib import Path

from ..conventions import fio_unescaped
from ..errors import PlanError
from ..plan.expand import Cell
from ..safepath import inside
from ..traces import TraceError, user_trace, write_iolog
from .jobfile import Stream


def iolog_name(stream: Stream) -> str:
    """The file name a stream's iolog names: the job's filename as fio's engine takes it (unescaped)."""
    a = stream.access
    return fio_unescaped(a.filename or f"stream-{stream.index}")


def replay_files(cell: Cell, streams: list[Stream], folder: Path, stem: str) -> dict[int, str]:
    """Write ``stem``.stream-N.iolog in ``folder`` for every stream; returns their absolute paths by index."""
    replay = cell.workload.replay
    assert replay is not None
    try:
        trace = user_trace(replay.file, replay.plan_dir)  # checked again: the file may have changed since validate
        out = {}
        for st in streams:
            path = inside(folder, f"{stem}.stream-{st.index}.iolog")
            write_iolog(trace, path, iolog_name(st), offset=st.offset, size=st.size, time_scale=replay.time_scale)
            out[st.index] = str(path.absolute())  # fio servers run elsewhere: never a relative path
        return out
    except TraceError as e:
        raise PlanError(f"workload {cell.workload.name!r}: replay: {e}") from None
