"""Links and rates, one grammar for all: Ethernet rates and Fibre Channel speeds (with their line coding).

The lab's links (plan.topology), the wire model and `protolab limits` (analysis.wire) all read rates here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ProtolabError


class LinkError(ProtolabError, ValueError):
    """A rate or link that cannot be read (a ValueError too, so plan validators report it as a field error)."""


@dataclass(frozen=True)
class Link:
    """A link: `bps` is the rate at which it moves 8-bit bytes including all framing (after line coding)."""

    name: str
    kind: str  # "ethernet" or "fc"
    bps: float
    baud: float | None = None
    coding: str = ""  # "8b/10b" or "64b/66b" for FC


def _fc(name: str, baud: float, coding: str) -> Link:
    data_bits_per_line_bit = 8 / 10 if coding == "8b/10b" else 64 / 66
    return Link(name, "fc", baud * data_bits_per_line_bit, baud, coding)


LINKS: dict[str, Link] = {
    "1GbE": Link("1GbE", "ethernet", 1e9),
    "2.5GbE": Link("2.5GbE", "ethernet", 2.5e9),
    "10GbE": Link("10GbE", "ethernet", 1e10),
    "25GbE": Link("25GbE", "ethernet", 2.5e10),
    "40GbE": Link("40GbE", "ethernet", 4e10),
    "100GbE": Link("100GbE", "ethernet", 1e11),
    "4GFC": _fc("4GFC", 4.25e9, "8b/10b"),  # 3.4 Gbit/s of bytes = 425 MB/s
    "8GFC": _fc("8GFC", 8.5e9, "8b/10b"),  # 850 MB/s
    "16GFC": _fc("16GFC", 14.025e9, "64b/66b"),  # 1700 MB/s
    "32GFC": _fc("32GFC", 28.05e9, "64b/66b"),  # 3400 MB/s
}
LINK_PRESETS: dict[str, float] = {name: link.bps for name, link in LINKS.items()}

_RATE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)\s*(bit/s|bits/s|bits|bit|bps|b/s|be|b|)$")
#: The fastest rate a link may have: 1.6 Tbit/s Ethernet (beyond it a rate is a typo, or infinite).
MAX_BPS = 1.6e12
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_link(value: str | float | int | Link) -> Link:
    """A Link from a preset name ("1GbE", "4GFC", case-insensitive) or an Ethernet rate ("10gbit", "2.5G", 1e9)."""
    if isinstance(value, Link):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not 0 < value <= MAX_BPS:
            raise LinkError(f"link: rate must be positive and at most 1.6 Tbit/s, got {value}")
        return Link(f"{value:g} bit/s", "ethernet", float(value))
    text = str(value).strip()
    for name, link in LINKS.items():
        if text.lower() == name.lower():
            return link
    m = _RATE.match(text.lower().replace(" ", ""))
    # "MB/s" is bytes; refuse rather than read it as megabits.
    if not m or float(m.group(1)) <= 0 or re.search(r"B(?!it|IT|E|e)", text):
        raise LinkError(
            f"link: cannot read rate {text!r}; use a preset ({', '.join(LINKS)}) or a rate such as 10gbit or 2.5G"
        )
    bps = float(m.group(1)) * _SCALE[m.group(2)]
    if not bps <= MAX_BPS:
        raise LinkError(f"link: rate {text!r} is beyond any link (at most 1.6 Tbit/s); write it like 10gbit or 2.5G")
    return Link(text, "ethernet", bps)


def parse_rate(value: str | float | int) -> float:
    """Bits per second from "1GbE", "10gbit", "2.5G", "4GFC" (its data rate after coding) or a number."""
    return parse_link(value).bps
