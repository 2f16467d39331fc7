"""The adapter for ``ip``, ``tc``, ``ethtool`` and ``sysctl``: namespaces, bridge, veth links, shaping."""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from ..conventions import digits
from ..errors import ProtolabError
from ..plan.topology import LinkSpec
from ..proc import Runner
from .names import Link, LinkEnd

TIMEOUT = 30.0
ETH_HEADER = 14
#: What a wire carries per frame beyond what tbf counts: preamble + SFD (8), FCS (4), inter-frame gap (12).
WIRE_EXTRA = 24
#: The shortest frame on a wire with those: 64 B minimum frame + 8 + 12.
WIRE_MIN_FRAME = 84


def kernel_netem(release: str | None = None, sys_module: Path = Path("/sys/module"),
                 proc_config: Path = Path("/proc/config.gz"), boot: Path = Path("/boot"),
                 modules: Path = Path("/lib/modules")) -> bool | None:
    """Whether this kernel offers the netem qdisc (link delay and loss), from what it says of itself — nothing is
    created: loaded (``/sys/module/sch_netem``), else its build configuration (``/proc/config.gz`` or
    ``/boot/config-RELEASE``): built in, or a module whose file is installed. None when the kernel says neither."""
    release = release or os.uname().release
    if (sys_module / "sch_netem").is_dir():
        return True
    text = None
    try:
        text = gzip.decompress(proc_config.read_bytes()).decode(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        try:
            text = (boot / f"config-{release}").read_text(errors="replace")
        except OSError:
            return None
    setting = next((line.split("=", 1)[1].strip() for line in text.splitlines()
                    if line.startswith("CONFIG_NET_SCH_NETEM=")), None)
    if setting == "y":
        return True
    if setting == "m":
        return any((modules / release).glob("kernel/net/sched/sch_netem.ko*"))
    return False


def tc_commands(end: LinkEnd, link: LinkSpec) -> list[list[str]]:
    """The ``tc`` commands that give one link end its rate (tbf), delay and loss (netem).

    tbf shapes the egress of each end, so both directions of a link run at the rate.
    Its burst is 1 ms of the rate (never below two frames): smaller bursts lose tokens
    whenever a busy CPU dequeues late (0.5 ms gave 0.89–0.94 Gb/s at 1GbE on 2 cores,
    1 ms a steady 0.956 = 1448/1514, the payload share of a full frame at MTU 1500).
    The queue holds at least 5 ms.
    netem, when asked for, hangs below tbf so delayed packets are still shaped.

    tbf counts a frame as its Ethernet header and IP packet (1,514 B at MTU 1500); a wire
    also carries preamble + SFD, FCS and the inter-frame gap (WIRE_EXTRA, 24 B), so an
    unadjusted 1GbE carried 1.6 % more than a real one. With offloads off every frame is a
    frame and tc's size table adds the 24 B to each (minimum 84 B, the shortest frame on a
    wire). With offloads on, tbf sees TSO/GSO super-packets and a size table would add the
    24 B once per 45 frames, so the rate itself is lowered by frame / (frame + 24): exact for
    full frames, which carry the bytes of a throughput-bound link.
    """
    base = ["tc", "-n", end.netns, "qdisc", "add", "dev", end.ifname]
    cmds: list[list[str]] = []
    netem: list[str] = []
    if link.delay_us:
        netem += ["delay", f"{link.delay_us}us"]
    if link.loss_pct:
        netem += ["loss", f"{link.loss_pct:g}%"]
    if netem:
        netem += ["limit", "100000"]
    rate = link.rate_bps
    if rate:
        frame = link.mtu + ETH_HEADER
        burst = max(2 * frame, rate // 8 // 1000, 16 * 1024)
        limit = max(4 * burst, rate // 8 // 200)
        if link.offloads:
            stab: list[str] = []
            rate = rate * frame // (frame + WIRE_EXTRA)
        else:
            stab = ["stab", "overhead", str(WIRE_EXTRA), "mpu", str(WIRE_MIN_FRAME), "linklayer", "ethernet"]
        cmds.append(base + ["root", "handle", "1:", *stab, "tbf", "rate", f"{rate}bit",
                            "burst", str(burst), "limit", str(limit)])
        if netem:
            cmds.append(base + ["parent", "1:1", "handle", "10:", "netem", *netem])
    elif netem:
        cmds.append(base + ["root", "handle", "10:", "netem", *netem])
    return cmds


def offload_command(end: LinkEnd, on: bool) -> list[str]:
    """The ``ethtool -K`` command that turns segmentation offloads (TSO, GSO, GRO) on or off."""
    state = "on" if on else "off"
    return ["ethtool", "-K", end.ifname, "tso", state, "gso", state, "gro", state]


def guard_commands(netns: str, ifnames: list[str], port: int, allowed: list[str]) -> list[list[str]]:
    """Policy-routing rules that let TCP to ``port`` arrive on ``ifnames`` only from ``allowed``.

    Used for NBD: Debian's nbdkit 1.32 ip filter cannot parse addresses (only keywords),
    and this kernel has no tc actions or netfilter tools, so admission is enforced by
    routing in the storage namespace: the local table moves from priority 0 to 1000,
    granted sources reach it at 100, everyone else's packets to ``port`` hit a
    ``prohibit`` rule at 101 and are dropped (the client's connect times out).
    """
    ip = ["ip", "-n", netns, "rule"]
    tcp = ["ipproto", "tcp", "dport", str(port)]
    cmds = [ip + ["add", "pref", "1000", "lookup", "local"], ip + ["del", "pref", "0"]]
    cmds += [ip + ["add", "pref", "100", "from", a, *tcp, "lookup", "local"] for a in allowed]
    cmds += [ip + ["add", "pref", "101", "iif", dev, *tcp, "prohibit"] for dev in ifnames]
    return cmds


@dataclass
class Net:
    """Namespaces, bridge and veth links through an injected runner."""

    runner: Runner

    def _ip(self, *args: str, check: bool = True):
        return self.runner.run(["ip", *args], check=check, timeout=TIMEOUT)

    def list_netns(self) -> list[str]:
        """Names of all network namespaces."""
        out = self._ip("netns", "list").stdout
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def add_netns(self, name: str) -> None:
        """Create a namespace with loopback up; lab links get no IPv6 link-local address.

        IPv6 stays enabled (rpcbind and ganesha expect it), but without link-local
        addresses the links carry no neighbour discovery chatter, only the benchmark.
        """
        self._ip("netns", "add", name)
        self._ip("-n", name, "link", "set", "lo", "up")
        self.runner.run(["sysctl", "-qw", "net.ipv6.conf.default.addr_gen_mode=1"],
                        netns=name, check=False, timeout=TIMEOUT)
        # All lab interfaces share one bridge: without these, every storage port answers ARP for every
        # storage address ("ARP flux"), so a host's requests may enter by another port than the path
        # it chose, and per-path traffic and the fixed path policy are no longer true.
        self.runner.run(["sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2"],
                        netns=name, timeout=TIMEOUT)

    def del_netns(self, name: str) -> bool:
        """Delete a namespace (its interfaces go with it); False when it did not exist."""
        if name not in self.list_netns():
            return False
        self._ip("netns", "del", name)
        return True

    def pids(self, name: str) -> list[int]:
        """Processes running in namespace ``name``."""
        out = self._ip("netns", "pids", name, check=False).stdout
        return [int(w) for w in out.split() if digits(w)]

    def add_bridge(self, netns: str, name: str) -> None:
        """A bridge (no STP: ports forward at once) in ``netns``."""
        self._ip("-n", netns, "link", "add", name, "type", "bridge", "stp_state", "0")
        self._ip("-n", netns, "link", "set", name, "up")

    def add_link(self, link: Link, bridge: str) -> None:
        """A veth pair created directly in its two namespaces, addressed, on the bridge, up."""
        self._ip("link", "add", "name", link.near.ifname, "netns", link.near.netns, "type", "veth",
                 "peer", "name", link.switch.ifname, "netns", link.switch.netns)
        self._ip("-n", link.switch.netns, "link", "set", link.switch.ifname, "master", bridge)
        self._ip("-n", link.near.netns, "addr", "add", link.address, "dev", link.near.ifname)
        for end in (link.switch, link.near):
            self._ip("-n", end.netns, "link", "set", end.ifname, "up")

    def guard(self, netns: str, ifnames: list[str], port: int, allowed: list[str]) -> None:
        """Admit TCP to ``port`` arriving on ``ifnames`` only from ``allowed`` addresses."""
        for cmd in guard_commands(netns, ifnames, port, allowed):
            self.runner.run(cmd, timeout=TIMEOUT)

    def mtu(self, end: LinkEnd) -> int:
        """The MTU in force on one link end."""
        out = self._ip("-n", end.netns, "-o", "link", "show", "dev", end.ifname).stdout
        words = out.split()
        return int(words[words.index("mtu") + 1])

    def check_netem(self, netns: str) -> None:
        """ProtolabError unless the kernel has netem (delay and loss need it); probed on loopback."""
        probe = ["tc", "-n", netns, "qdisc", "add", "dev", "lo", "root", "handle", "1:", "netem", "delay", "0us"]
        done = self.runner.run(probe, check=False, timeout=TIMEOUT)
        if done.returncode != 0:
            raise ProtolabError(
                "lab.link: delay and loss_pct need the kernel's netem qdisc (sch_netem), which this kernel "
                f"does not offer ({done.one_line_error()}); remove delay/loss_pct or use a kernel with netem")
        self.runner.run(["tc", "-n", netns, "qdisc", "del", "dev", "lo", "root"], check=False, timeout=TIMEOUT)

    def configure(self, link: Link, spec: LinkSpec) -> None:
        """Apply MTU, offloads, rate, delay and loss to both ends of ``link``, replacing what was there."""
        ends = (link.near, link.switch)
        # Lower MTUs first on the sending side is unnecessary for veth: both ends are set before use.
        for end in ends:
            self._ip("-n", end.netns, "link", "set", "dev", end.ifname, "mtu", str(spec.mtu))
        for end in ends:
            self.runner.run(offload_command(end, spec.offloads), netns=end.netns, timeout=TIMEOUT)
        for end in ends:
            self.runner.run(["tc", "-n", end.netns, "qdisc", "del", "dev", end.ifname, "root"],
                            check=False, timeout=TIMEOUT)
            for cmd in tc_commands(end, spec):
                self.runner.run(cmd, timeout=TIMEOUT)
