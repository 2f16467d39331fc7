"""The lab's links are real: MTU on both ends, offloads, netem, and 1GbE shaping measured with a client."""

from __future__ import annotations

import json

import pytest

from conftest import FIO, PREFIX, sh, spec
from protolab.plan.topology import LinkSpec

pytestmark = pytest.mark.lab

UDP_RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9999)); s.settimeout(5)
print(len(s.recv(70000)), flush=True)
"""
UDP_SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: never fragment
n = int(sys.argv[2])
try:
    for _ in range(20):
        s.sendto(b"x" * n, (sys.argv[1], 9999)); time.sleep(0.05)
except OSError as e:
    print("error", e.errno); sys.exit(3)
"""


def link_mtus(lab) -> dict[tuple[str, str], int]:
    """The MTU of every lab link end, read back from the kernel."""
    out = {}
    for netns, ifname in lab.interfaces():
        words = sh(["ip", "-n", netns, "-o", "link", "show", "dev", ifname], check=True).stdout.decode().split()
        out[(netns, ifname)] = int(words[words.index("mtu") + 1])
    return out


def udp_datagram_arrives(lab, size: int) -> bool:
    """Send a DF datagram of ``size`` payload bytes from host 0 to storage port 0; did it arrive whole?"""
    import subprocess

    st = lab.names.storage_ns
    recv = subprocess.Popen(["ip", "netns", "exec", st, "python3", "-c", UDP_RECEIVER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        import time

        time.sleep(0.3)
        sent = sh(["python3", "-c", UDP_SENDER, lab.names.storage_address(0), str(size)],
                  netns=lab.names.host_ns(0), timeout=10)
        if sent.returncode != 0:  # refused at the host (EMSGSIZE): nothing left it, no need to wait out the receiver
            return False
        out, _ = recv.communicate(timeout=10)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    return sent.returncode == 0 and out.decode().strip() == str(size)


def test_mtu_is_in_force_on_both_ends_of_every_link(make_lab):
    lab = make_lab(spec(hosts=2, link=LinkSpec(mtu=9000)), {"nbd"})
    mtus = link_mtus(lab)
    assert len(mtus) == 2 * (1 + 2)  # storage port + two host NICs, two ends each
    assert set(mtus.values()) == {9000}, mtus
    # 9000 − 20 (IP) − 8 (UDP) fits in one frame end to end; one byte more cannot leave the host.
    assert udp_datagram_arrives(lab, 8972)
    assert not udp_datagram_arrives(lab, 8973)

    lab.set_link(LinkSpec(mtu=1500))
    assert set(link_mtus(lab).values()) == {1500}
    assert udp_datagram_arrives(lab, 1472)
    assert not udp_datagram_arrives(lab, 1473)


def test_set_link_applies_offloads_and_rate_in_place(make_lab):
    lab = make_lab(spec(), {"nbd"})
    lab.set_link(LinkSpec(rate="10GbE", mtu=1500, offloads=False))
    for netns, ifname in lab.interfaces():
        feats = sh(["ethtool", "-k", ifname], netns=netns, check=True).stdout.decode()
        assert "tcp-segmentation-offload: off" in feats
        assert "generic-segmentation-offload: off" in feats
        assert "generic-receive-offload: off" in feats
        qd = sh(["tc", "-n", netns, "qdisc", "show", "dev", ifname], check=True).stdout.decode()
        assert "tbf 1: root" in qd and "rate 10Gbit" in qd, qd

    lab.set_link(LinkSpec(rate=None, offloads=True))
    for netns, ifname in lab.interfaces():
        feats = sh(["ethtool", "-k", ifname], netns=netns, check=True).stdout.decode()
        assert "tcp-segmentation-offload: on" in feats
        qd = sh(["tc", "-n", netns, "qdisc", "show", "dev", ifname], check=True).stdout.decode()
        assert "tbf" not in qd, qd


def netem_available() -> bool:
    """Whether this kernel offers the netem qdisc."""
    sh(["ip", "netns", "add", f"{PREFIX}-probe"], check=True)
    try:
        return sh(["tc", "-n", f"{PREFIX}-probe", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]).returncode == 0
    finally:
        sh(["ip", "netns", "del", f"{PREFIX}-probe"], check=True)


def connect_seconds(lab) -> float:
    """Time of one TCP connect from host 0 to the NBD port (one round trip)."""
    rtt = sh(["python3", "-c",
              "import socket,time;t=time.perf_counter();"
              f"socket.create_connection(('{lab.names.storage_address(0)}',10809),timeout=5).close();"
              "print(time.perf_counter()-t)"], netns=lab.names.host_ns(0), timeout=15)
    assert rtt.returncode == 0, rtt.stderr
    return float(rtt.stdout)


def test_delay_and_loss_are_real_or_refused_in_one_line(make_lab):
    lab = make_lab(spec(), {"nbd"})
    slow = LinkSpec(rate="10GbE", delay="2ms", loss_pct=0.5)
    if not netem_available():
        from protolab.errors import ProtolabError

        with pytest.raises(ProtolabError, match=r"netem") as err:
            lab.set_link(slow)
        assert "\n" not in str(err.value)
        assert lab.link.delay is None  # nothing was changed
        pytest.skip("this kernel has no netem: delay/loss are refused with a clear error (checked)")
    lab.set_link(slow)
    for netns, ifname in lab.interfaces():
        qd = sh(["tc", "-n", netns, "qdisc", "show", "dev", ifname], check=True).stdout.decode()
        assert "netem 10:" in qd and "delay 2ms" in qd and "loss 0.5%" in qd, qd
    # 2 links × 2 directions × 2 ms between host and storage.
    assert 0.008 <= connect_seconds(lab) < 0.1


def read_gbps_64k(lab) -> float:
    """Payload Gb/s of a 64 KiB sequential read over NBD from host 0 (fio if built, else nbdcopy)."""
    url = lab.endpoint("nbd").url
    ns = lab.names.host_ns(0)
    if FIO.exists():
        out = lab.workdir / "fio.json"
        done = sh([str(FIO), "--name=seqread", "--ioengine=nbd", f"--uri={url}", "--rw=read", "--bs=64k",
                   "--iodepth=8", "--time_based", "--runtime=6", "--ramp_time=1", f"--size={lab.spec.export_bytes}",
                   "--output-format=json", f"--output={out}"], netns=ns, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(out.read_text())["jobs"][0]["read"]["bw_bytes"] * 8 / 1e9
    import time

    t = time.perf_counter()
    done = sh(["nbdcopy", "--no-extents", "--request-size=65536", "--connections=1", url, "null:"],
              netns=ns, timeout=60)
    assert done.returncode == 0, done.stderr
    return lab.spec.export_bytes * 8 / (time.perf_counter() - t) / 1e9


def ceiling_gbps(lab, capsys, what: str, cap: float) -> float:
    """The link's ceiling: the best of up to three reads, every one at or under `cap`.

    A shaper's rate is a ceiling, and a busy machine only takes from it (nbdkit and fio share two cores with the
    neighbours: 0.895 Gb/s once in CI, 2026-12-07), so the best read estimates it; stop once one is within 10 %."""
    reads = []
    while len(reads) < 3 and (not reads or max(reads) < 0.90 * cap):
        reads.append(read_gbps_64k(lab))
        assert reads[-1] <= cap, f"{what}: {reads[-1]:.3f} Gb/s of payload is over the link's {cap} Gb/s"
    with capsys.disabled():
        print(f"\n  64 KiB sequential NBD read over emulated {what}: {', '.join(f'{r:.3f}' for r in reads)} Gb/s")
    return max(reads)


def test_1gbe_link_delivers_90_to_100_percent_of_1gbps(make_lab, capsys):
    lab = make_lab(spec(export_size="512M", link=LinkSpec(rate="1GbE")), {"nbd"})
    assert ceiling_gbps(lab, capsys, "1GbE", 1.00) >= 0.90

    lab.set_link(LinkSpec(rate="500mbit"))
    assert ceiling_gbps(lab, capsys, "500 Mbit/s", 0.50) >= 0.45
