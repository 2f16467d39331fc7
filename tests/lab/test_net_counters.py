"""Interface counters read from a thread inside each namespace equal what `ip -s -j link` says."""

from __future__ import annotations

import subprocess
import sys

from conftest import PREFIX, sh
from protolab.proc import SubprocessRunner
from protolab.telemetry.net import read_counters, read_namespaces


def test_counters_from_proc_net_dev_of_each_namespace_equal_ip_link():
    a, b = f"{PREFIX}-nca", f"{PREFIX}-ncb"
    try:
        for ns in (a, b):
            sh(["ip", "netns", "add", ns], check=True)
            # no IPv6 on the pair: its MLD reports, sent on their own timers after the link comes up, landed
            # between the two reads once (7 packets read here, 8 by ip link a moment later)
            for conf in ("all", "default"):
                sh(["sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1"], netns=ns, check=True)
        sh(["ip", "link", "add", f"{PREFIX}nca0", "netns", a, "type", "veth", "peer", "name", f"{PREFIX}ncb0",
            "netns", b], check=True)
        for ns, ifname, addr in ((a, f"{PREFIX}nca0", "198.19.254.1/30"), (b, f"{PREFIX}ncb0", "198.19.254.2/30")):
            sh(["ip", "-n", ns, "addr", "add", addr, "dev", ifname], check=True)
            sh(["ip", "-n", ns, "link", "set", ifname, "up"], check=True)
        send = ("import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                "for _ in range(5):\n    s.sendto(b'x' * 1000, ('198.19.254.2', 9))\n    time.sleep(0.05)\n")
        sent_by = sh([sys.executable, "-c", send], netns=a, timeout=20)
        assert sent_by.returncode == 0, sent_by.stderr
        runner = SubprocessRunner()
        got = read_namespaces(runner, [a, b, None])
        ip_a, ip_b = read_counters(runner, a), read_counters(runner, b)
        sent = got[a][f"{PREFIX}nca0"]
        # five datagrams of 1,000 bytes (1,042-byte frames), their ICMP answers and ARP
        assert sent.tx_packets >= 5 and sent.rx_packets >= 1 and sent.tx_bytes >= 5 * 1042
        assert got[a][f"{PREFIX}nca0"] == ip_a[f"{PREFIX}nca0"] and got[b][f"{PREFIX}ncb0"] == ip_b[f"{PREFIX}ncb0"]
        assert got[b][f"{PREFIX}ncb0"].rx_bytes == sent.tx_bytes
        assert f"{PREFIX}nca0" not in got[None] and "lo" in got[None]  # the current namespace is left as it was
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n in (a, b)]
