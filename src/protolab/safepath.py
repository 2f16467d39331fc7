"""The one function that turns names from a plan into file paths: the result never leaves its folder."""

from __future__ import annotations

import re
from pathlib import Path

_PART = re.compile(r"^[A-Za-z0-9_@+-][A-Za-z0-9._@+-]{0,250}$")


def inside(folder: Path, *parts: str) -> Path:
    """``folder/part/…`` after checking each part is one plain file name (no '/', no '..', no leading dot).

    Names come from the plan (workloads, configurations, hosts) and are already safe by the plan's
    rules; this is the second lock, so that no route can write outside the run directory.
    """
    for part in parts:
        if not isinstance(part, str) or not _PART.match(part) or ".." in part.split("."):
            raise ValueError(f"unsafe file name {part!r}: names that become files are letters, digits, '.', "
                             "'_' and '-'")
    path = Path(folder).joinpath(*parts)
    base = Path(folder).resolve()
    if base not in path.resolve().parents and path.resolve() != base:
        raise ValueError(f"{path} is outside {folder}")
    return path
