"""Bytes and packets per interface of a network namespace, from `ip -s -j link`."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..proc import Runner


@dataclass(frozen=True)
class Counters:
    """Cumulative counters of one interface."""

    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0

    def __sub__(self, other: "Counters") -> "Counters":
        return Counters(self.rx_bytes - other.rx_bytes, self.tx_bytes - other.tx_bytes,
                        self.rx_packets - other.rx_packets, self.tx_packets - other.tx_packets)


def parse_ip_link_stats(text: str) -> dict[str, Counters]:
    """Interface name → counters from `ip -s -j link show` output."""
    out = {}
    for link in json.loads(text or "[]"):
        st = link.get("stats64") or link.get("stats") or {}
        rx, tx = st.get("rx", {}), st.get("tx", {})
        out[link["ifname"]] = Counters(int(rx.get("bytes", 0)), int(tx.get("bytes", 0)),
                                       int(rx.get("packets", 0)), int(tx.get("packets", 0)))
    return out


def read_counters(runner: Runner, netns: str | None) -> dict[str, Counters]:
    """Counters of every interface in ``netns`` (the current namespace when None)."""
    argv = ["ip", *(["-n", netns] if netns else []), "-s", "-j", "link", "show"]
    return parse_ip_link_stats(runner.run(argv, timeout=10).stdout)


OFFLOAD_FEATURES = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload")


def parse_offloads(text: str) -> bool:
    """Whether any segmentation offload (TSO, GSO, GRO) is on, from `ethtool -k` output."""
    for line in text.splitlines():
        name, _, state = line.partition(":")
        if name.strip() in OFFLOAD_FEATURES and state.split()[:1] == ["on"]:
            return True
    return False


def read_offloads(runner: Runner, netns: str | None, ifname: str) -> bool | None:
    """Whether ``ifname`` hands super-packets to (or takes them from) the stack; None if unknown.

    With TSO/GSO/GRO on, interface packet counters count segments handed to the NIC, not frames.
    """
    res = runner.run(["ethtool", "-k", ifname], netns=netns, check=False, timeout=10)
    return parse_offloads(res.stdout) if res.returncode == 0 else None
