"""Sizes and durations as users write them: "4k", "1G", "512MiB"; "30s", "5m", 90."""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1, "": 1, "m": 60, "min": 60, "h": 3600}
#: A compound duration: "8h30m", "1h 5m 30s" (each unit once, largest first).
_COMPOUND = re.compile(r"^\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m(?:in)?)?\s*(?:(\d+(?:\.\d+)?)\s*s)?\s*$", re.IGNORECASE)
MAX_SIZE = 2**63 - 1  # fio keeps sizes and offsets in 64-bit integers


def parse_size(value: int | str) -> int:
    """Bytes from an int or a string like "4k", "8KiB", "1G" (binary multiples, as fio uses)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size like '4k' or '1G', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative (got {value})")
        if value > MAX_SIZE:
            raise ValueError(f"a size of {value} bytes is beyond what fio accepts (at most 8E)")
        return value
    if not isinstance(value, str):  # strict: 1.5e9 is not a size; write "1.5G" or a whole number
        raise ValueError(f"expected a size like '4k' or '1G' or a whole number of bytes, got {value!r}")
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"expected a size like '4k', '64KiB' or '1G', got {value!r}")
    number, unit = float(m.group(1)), m.group(2).lower()
    result = number * 1024 ** _POW[unit]
    if result != int(result):
        raise ValueError(f"{value!r} is not a whole number of bytes")
    if result > MAX_SIZE:
        raise ValueError(f"a size of {value!r} is beyond what fio accepts (at most 8E)")
    return int(result)


def format_size(n: int) -> str:
    """The shortest exact binary form: 4096 → "4k", 1048576 → "1M", 1000 → "1000"."""
    for unit, p in (("P", 5), ("T", 4), ("G", 3), ("M", 2), ("k", 1)):
        if n and n % 1024**p == 0:
            return f"{n // 1024**p}{unit}"
    return str(n)


def parse_duration(value: int | float | str) -> float:
    """Seconds from a number or a string like "30s", "5m", "1h", "500ms", "8h30m"."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like '30s' or '5m', got {value!r}")
    if isinstance(value, (int, float)):
        if value != value or value < 0:
            raise ValueError(f"a duration must be a number of seconds, at least 0 (got {value})")
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        c = None if m else _COMPOUND.match(str(value))
        if c and any(c.groups()):
            h, mins, secs = c.groups()
            seconds = int(h or 0) * 3600 + int(mins or 0) * 60 + float(secs or 0)
        elif not m:
            raise ValueError(f"expected a duration like '30s', '5m', '8h30m' or 90, got {value!r}")
        else:
            seconds = float(m.group(1)) * _SECONDS[(m.group(2) or "").lower()]
    # job files carry whole milliseconds: 0.0001 s would become runtime=0, which fio reads as "no limit"
    if seconds != float("inf") and abs(seconds * 1000 - round(seconds * 1000)) > 1e-6:
        raise ValueError(f"a duration of {value!r} is not a whole number of milliseconds")
    return seconds


def format_duration(seconds: float) -> str:
    """A compact duration: 300 → "5m", 90 → "90s", 0.5 → "0.5s"."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"
