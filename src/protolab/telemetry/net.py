"""Bytes and packets per interface of network namespaces: the kernel's /proc/net/dev, read from a
thread that enters each namespace (`ip -s -j link` where that is not possible).

Reading every namespace's counters must take a moment, not seconds: a sample stands for one instant,
and a busy machine (160 fio jobs, other work) made 10 `ip` processes take up to 13 s, so the CPU read
at a sample's start and the bytes read at its end described different seconds (a client run's window
then showed 0 bytes). A thread that `setns`es into a namespace sees that namespace in
/proc/thread-self/net/dev; the thread ends after the reads, so no other thread's namespace changes.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from dataclasses import dataclass

from ..proc import Runner
from .source import Fields, Source, lerp


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


def parse_proc_net_dev(text: str) -> dict[str, Counters]:
    """Interface name → counters from /proc/net/dev (receive bytes, packets …; transmit bytes, packets …)."""
    out = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        f = rest.split()
        if sep and len(f) >= 10:
            out[name.strip()] = Counters(int(f[0]), int(f[8]), int(f[1]), int(f[9]))
    return out


CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"  # where `ip netns` binds its named namespaces


def read_namespaces(runner: Runner, namespaces: list[str | None]) -> dict[str | None, dict[str, Counters]]:
    """Counters of every interface in each namespace (None: the current one), read within milliseconds.

    One short-lived thread enters each namespace in turn and reads /proc/thread-self/net/dev; a
    namespace it cannot enter (no such name, no CAP_SYS_ADMIN) is read with `ip` instead.
    """
    got: dict[str | None, dict[str, Counters]] = {}

    def work() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        for ns in sorted(namespaces, key=lambda n: n is not None):  # the current namespace before any setns
            try:
                if ns is not None:
                    fd = os.open(os.path.join(NETNS_DIR, ns), os.O_RDONLY)
                    try:
                        if libc.setns(fd, CLONE_NEWNET) != 0:
                            continue
                    finally:
                        os.close(fd)
                with open("/proc/thread-self/net/dev") as f:
                    got[ns] = parse_proc_net_dev(f.read())
            except OSError:
                continue

    t = threading.Thread(target=work, name="protolab-netns-counters", daemon=True)
    t.start()
    t.join()
    for ns in namespaces:
        if ns not in got:
            got[ns] = read_counters(runner, ns)
    return got


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


Port = tuple[str, str]  # (netns, ifname)


class InterfaceTraffic(Source[dict[Port, Counters]]):
    """Bytes and packets of the watched interfaces (interfaces); one not found is left out. ``storage`` are the
    ports whose bytes tell how far the I/O has got (every interface when None)."""

    name = "interfaces"

    def __init__(self, runner: Runner, interfaces: list[Port], storage: list[Port] | None = None):
        self.runner, self.interfaces, self.storage = runner, interfaces, storage

    def sample(self) -> dict[Port, Counters]:
        seen = read_namespaces(self.runner, sorted({ns for ns, _ in self.interfaces}))
        return {(ns, ifname): seen[ns][ifname] for ns, ifname in self.interfaces if ifname in seen[ns]}

    def interpolate(self, a: dict[Port, Counters], b: dict[Port, Counters], f: float) -> dict[Port, Counters]:
        out = {}
        for key, ca in a.items():
            cb = b.get(key, ca)
            out[key] = Counters(*(round(lerp(getattr(ca, n), getattr(cb, n), f))
                                  for n in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")))
        return out

    def delta(self, before: dict[Port, Counters], after: dict[Port, Counters]) -> Fields:
        out = {}
        for key, a in before.items():
            if key in after:
                d = after[key] - a
                out[f"{key[0]}/{key[1]}"] = {"rx_bytes": d.rx_bytes, "tx_bytes": d.tx_bytes,
                                             "rx_packets": d.rx_packets, "tx_packets": d.tx_packets}
        return {"interfaces": out}

    def carried(self, sample: dict[Port, Counters]) -> float | None:
        """Bytes the storage ports had carried (both ways) at ``sample``; None without any."""
        ports = self.interfaces if self.storage is None else self.storage
        counted = [sample[p] for p in ports if p in sample]
        return float(sum(c.rx_bytes + c.tx_bytes for c in counted)) if counted else None


class Offloads(Source[dict[Port, bool | None]]):
    """Whether each port's segmentation offloads were on (offloads): a link changes only between cells, so the
    state is read at a window's first sample (after the instant) and kept until ``start`` of the next."""

    name = "offloads"
    instant = False

    def __init__(self, runner: Runner, ports: list[Port]):
        self.runner, self.ports = runner, ports
        self.states: dict[Port, bool | None] | None = None

    def start(self) -> None:
        self.states = None

    def sample(self) -> dict[Port, bool | None]:
        if self.states is None:
            self.states = {key: read_offloads(self.runner, key[0], key[1]) for key in self.ports}
        return dict(self.states)

    def interpolate(self, a: dict[Port, bool | None], b: dict[Port, bool | None], f: float) -> dict[Port, bool | None]:
        return dict(a)

    def delta(self, before: dict[Port, bool | None], after: dict[Port, bool | None]) -> Fields:
        return {"offloads": {f"{ns}/{ifname}": on for (ns, ifname), on in before.items()}}
