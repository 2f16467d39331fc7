"""A guest's data NIC on the lab's links: a tap in a lab namespace, the guest routed behind that namespace.

The storage traffic of kernel data paths (a target in the storage server guest, an initiator in a load
guest) must cross the lab's shaped links exactly as the userspace servers' traffic does. So a guest's data
NIC is a tap QEMU creates in the namespace of its role (the storage namespace, or the load host's), and that
namespace routes it: a /32 route to the guest through the tap, forwarding on, and proxy ARP on the tap and on
the lab link, so the guest and the far side each see the other as on-link. Nothing about the lab's links
changes: their rate, MTU, shaping and counters apply to the guest's traffic as to any other, and the tap,
its route and its ARP entries go away with QEMU (the tap is not persistent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import ToolError
from ..proc import Runner

TIMEOUT = 30.0
#: Data NICs' MAC addresses: QEMU's locally administered range, "pl" and the role's number
MAC_PREFIX = "52:54:00:70:6c"


@dataclass(frozen=True)
class DataNic:
    """A guest's data NIC: the tap's namespace and name, the guest's address and prefix, the lab link it uses."""

    netns: str
    tap: str
    address: str  # the guest's, no prefix length
    prefixlen: int
    mtu: int
    link_ifname: str  # the lab link in ``netns`` the guest's traffic leaves by
    index: int = 1  # the last byte of the MAC

    @property
    def mac(self) -> str:
        """The data NIC's MAC address (the guest finds its data NIC by it)."""
        return f"{MAC_PREFIX}:{self.index:02x}"

    def qemu_args(self) -> list[str]:
        """QEMU's arguments for the NIC: a tap created by QEMU in its namespace, removed when QEMU exits."""
        return ["-netdev", f"tap,id=data,ifname={self.tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=data,mac={self.mac}"]

    def kernel_args(self) -> list[str]:
        """The guest's kernel command line for its data NIC (read by the image's init)."""
        return [f"pl.mac={self.mac}", f"pl.ip={self.address}/{self.prefixlen}", f"pl.mtu={self.mtu}"]

    def commands(self) -> list[list[str]]:
        """The namespace's side: the tap up at the link's MTU, the guest's /32 route, proxy ARP, forwarding."""
        ip = ["ip", "-n", self.netns]
        return [ip + ["link", "set", "dev", self.tap, "mtu", str(self.mtu), "up"],
                ip + ["route", "replace", f"{self.address}/32", "dev", self.tap],
                ["sysctl", "-qw", "net.ipv4.ip_forward=1", f"net.ipv4.conf.{self.tap}.proxy_arp=1",
                 f"net.ipv4.conf.{self.link_ifname}.proxy_arp=1"]]

    def configure(self, runner: Runner, timeout: float = 10.0) -> None:
        """Once QEMU has made the tap: route the guest behind the namespace. ToolError if the tap never appears."""
        deadline = time.monotonic() + timeout
        while runner.run(["ip", "-n", self.netns, "link", "show", "dev", self.tap], check=False,
                         timeout=TIMEOUT).returncode != 0:
            if time.monotonic() > deadline:
                raise ToolError(f"guest data NIC: QEMU made no tap {self.tap} in {self.netns} within {timeout:g} s")
            time.sleep(0.1)
        for cmd in self.commands():
            runner.run(cmd, netns=self.netns if cmd[0] == "sysctl" else None, timeout=TIMEOUT)
