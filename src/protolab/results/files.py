"""Writing files so that a crash, a signal or a full disk never leaves a half-written one.

Whole files (manifest, reports) are replaced atomically (temporary file + rename);
growing files (records.jsonl, series.csv, cells.csv) are appended one complete
line at a time and flushed, so their cost does not grow with their length. A
write that fails raises `StoreError` naming the path.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ProtolabError
from ..trust import make_dir


class StoreError(ProtolabError):
    """A run directory's file could not be written (disk full, permission, …)."""


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _failed(path: Path, e: OSError) -> StoreError:
    return StoreError(f"cannot write {path}: {e.strerror or e} — free space or fix permissions, then "
                      "'protolab resume' the run")


def file_mode() -> int:
    """The mode of a new file under this process's umask (0640 under protolab's default 027; PROTOLAB_UMASK)."""
    current = os.umask(0)
    os.umask(current)
    return 0o666 & ~current


def atomic_write(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a part.

    ``mode``: by default as the umask gives (mkstemp's 0600 is replaced). The rename replaces a symlink at
    ``path`` itself, never what it points to.
    """
    mode = file_mode() if mode is None else mode
    make_dir(path.parent)  # tables/, figures/, compare's folder: never through a link or another user's directory
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _failed(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise _failed(path, e) from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def append_lines(path: Path, lines: list[str]) -> None:
    """Append complete lines to ``path`` (created as the umask gives, never through a symlink) and flush them."""
    if not lines:
        return
    data = "".join(line if line.endswith("\n") else line + "\n" for line in lines).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            # one write: a reader never sees half a line unless the disk filled mid-write,
            # and readers skip a torn last line
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise _failed(path, e) from None


def write_json(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
