"""A run directory read or written as root: no symlink anywhere, root's alone to write (its manifest's shape:
results.manifest).

A run directory may come from someone else (a colleague's copy, a shared results folder). protolab (as root)
never follows a symlink in it and, before writing to it, requires that only root can change it — otherwise a
symlink planted between a check and a write would redirect root's writes. As another user, that user's own
permissions protect them, and only the symlink rule applies.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..trust import UnsafePath, check_ancestors


def one_line_error(e: Exception) -> str:
    """An exception's message without quoting what was read (a run directory's bytes are not ours to print)."""
    if isinstance(e, ValueError) and hasattr(e, "lineno"):  # json.JSONDecodeError: where, never what
        return f"not JSON at line {e.lineno}, column {e.colno}"
    return getattr(e, "strerror", None) or type(e).__name__


def check_tree(root: Path, *, write: bool) -> None:
    """Refuse (UnsafePath, one line) a run directory holding a symlink at any depth; as root and for ``write``,
    also one that a user other than root could change (any directory in it not root's alone, or a parent)."""
    as_root = write and os.geteuid() == 0
    if as_root:
        check_ancestors(root, invoker=True)
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            st = os.lstat(os.path.join(here, name))
            if stat.S_ISLNK(st.st_mode):
                rel = os.path.relpath(os.path.join(here, name), root)
                raise UnsafePath(f"{root}: {rel} is a symlink; protolab reads and writes no run directory that "
                                 "holds one (remove it, or copy the run without links)")
        if as_root:
            st = os.lstat(here)
            if st.st_uid != 0 or st.st_mode & 0o022:
                raise UnsafePath(f"{here}: owned by uid {st.st_uid} (mode {stat.S_IMODE(st.st_mode):o}); as root "
                                 "protolab writes only in run directories root alone can change — run this "
                                 "command as that user, or copy the run directory")
