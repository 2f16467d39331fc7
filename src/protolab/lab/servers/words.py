"""Checks of every value that reaches a guest's kernel command line (the guest's init splits words on commas and
never evaluates them): addresses in the lab's range, ports, disk serials, NQN and IQN grammar."""

from __future__ import annotations

import re
from ipaddress import IPv4Address

from ...errors import ProtolabError
from ...plan import attach
from ..names import check_in_lab_range


def check_nqn(nqn: str, what: str = "NQN") -> str:
    """``nqn`` if it follows the NQN grammar (plan.attach.check_nqn); ProtolabError if not."""
    try:
        return attach.check_nqn(nqn, what)
    except ValueError as e:
        raise ProtolabError(str(e)) from None


def check_iqn(iqn: str, what: str = "IQN") -> str:
    """``iqn`` if it follows the iSCSI name grammar (plan.attach.check_iqn); ProtolabError if not."""
    try:  # the plan's grammar: no comma, space or newline reaches the guest
        return attach.check_iqn(iqn, what)
    except ValueError as e:
        raise ProtolabError(str(e)) from None


def check_serial(disk: str) -> None:
    """``disk`` is one of protolab's disk serials (pl0, pl1, …)."""
    if not re.fullmatch(r"pl[0-9]{1,2}", disk):
        raise ProtolabError(f"disk serial {disk!r}: protolab's disks are pl0, pl1, …")


def check_address(address: str) -> None:
    """``address`` is one IPv4 address in the lab's range."""
    IPv4Address(address)  # ValueError for anything that is not one address
    check_in_lab_range(address)


def check_endpoint(address: str, port: int) -> None:
    """``address`` in the lab's range and ``port`` a TCP port."""
    check_address(address)
    if not 1 <= port <= 65535:
        raise ProtolabError(f"port {port} is not a TCP port (1-65535)")
