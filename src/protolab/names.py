"""Names from a plan, and the one function that turns them into file paths.

Plan, workload, configuration, target and host names end up in file names (job
files, raw output, records, logs). They are checked when the plan is read
(``NAME_PATTERN``), and every path protolab builds from them goes through
``child_path``, which refuses anything that could leave its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

NAME_RE = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$"
"""A safe name: letters, digits, '.', '_', '-'; 1 to 64 characters; not starting with '.'."""
NAME_PATTERN = re.compile(NAME_RE)
NAME_RULE = "use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"

# File names protolab builds join safe names with '__', '.', and digits; '+' is kept for
# configuration names written before names were restricted (old run directories); '@' joins
# a host and its namespace in agent log names.
_FILE_PART = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9._+@-]{0,254}$")


def is_safe_name(name: object) -> bool:
    """Whether ``name`` is a string that is safe as a plan name (see NAME_RULE)."""
    return isinstance(name, str) and NAME_PATTERN.fullmatch(name) is not None


def child_path(folder: Path, name: str) -> Path:
    """``folder / name``, refused (ValueError) unless ``name`` is one plain file name inside ``folder``.

    No separators, no leading '.' (so no '..'), no control characters: a name from a plan can
    never point outside the run directory.
    """
    if not isinstance(name, str) or not _FILE_PART.fullmatch(name):
        raise ValueError(f"unsafe file name {name!r}: {NAME_RULE}")
    path = Path(folder) / name
    if path.parent != Path(folder):  # belt and braces: the pattern already forbids '/'
        raise ValueError(f"unsafe file name {name!r}: it leaves {folder}")
    return path
