"""The wire model's frames per I/O against captures and the lab's own counters, for every lab protocol fio reaches, at
MTU 1500 and 9000, offloads off (analysis.wire_tcp: Linux's pure ACKs as captured)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess

import pytest

from conftest import family_prefix, lab_workdir
from protolab.analysis.derived import figures
from protolab.analysis.wire import wire_cost
from protolab.plan.load import load_plan_text
from protolab.plan.protocols import PROTOCOLS
from protolab.run import Study

pytestmark = pytest.mark.lab
PREFIX = family_prefix("w")
MTUS = (1500, 9000)
#: the frame of one 8 KiB read's request, alone in its segment (66 B of Ethernet, IP and TCP headers): an iSCSI
#: command PDU's 48 B header, an RPC READ call (124 B with the lab's machine name), an NBD request (28 B)
REQUEST_FRAME = {"iscsi": 48 + 66, "nfs": 124 + 66, "nbd": 28 + 66}
PURE_ACK = 66


@pytest.fixture
def workdir(request):
    yield from lab_workdir(PREFIX, request.node.name[:30])


def _frames(pcap) -> list[tuple[int, str]]:
    """Each frame of a pcap file (Ethernet, as tcpdump -w writes it) as (its length, header included; its IPv4
    destination): read here, as tcpdump's text of 100,000 frames takes a second to print."""
    data = pcap.read_bytes()
    magic, linktype = data[:4], struct.unpack_from("<I", data, 20)[0]
    assert magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") and linktype == 1, (magic, linktype)
    out, at = [], 24
    while at + 16 <= len(data):
        caplen, length = struct.unpack_from("<II", data, at + 8)
        frame = data[at + 16:at + 16 + caplen]
        out.append((length, socket.inet_ntoa(frame[30:34])))
        at += 16 + caplen
    return out


def _capture(pcap, storage: str, request: int) -> tuple[int, int, int, int, int]:
    """Frames, bytes, I/Os and pure ACKs (66 B frames) to storage and to the host of a capture's steady stream: from
    its first request (a frame of ``request`` bytes to ``storage``) to its last, so that the connection's setup (a
    login, an NFS mount) and end are left out."""
    frames = _frames(pcap)
    at = [i for i, (n, dst) in enumerate(frames) if n == request and dst == storage]
    if len(at) < 2:
        return 0, 0, 0, 0, 0
    stream = frames[at[0]:at[-1]]
    acks = [dst == storage for n, dst in stream if n == PURE_ACK]
    return len(stream), sum(n for n, _ in stream), len(at) - 1, sum(acks), len(acks) - sum(acks)


def test_frames_per_io_follow_the_wire_model_for_every_lab_protocol_at_1500_and_9000(workdir, tmp_path):
    """8 KiB random reads, one I/O in flight (where Linux's ACKs are one per multi-segment message and none per
    one-segment message), a 2 s window per configuration of one lab, each configuration's link its own MTU.
    tcpdump on the storage port through each warm-up and window (its I/Os counted by their requests, from the first
    to the last) gives the model's frames per I/O within 5 %; protolab's counters of that port in the window count
    the frames the capture holds (bytes per frame within 2 %: the capture's warm-up is in it, and Linux's ACKs vary
    a little) and give the model's frames per I/O within 5 % too (I/Os counted by fio: the window's boundaries
    between fio's one-second statuses move that count by up to 4 % in a 1 s window, 2 % in 2 s). The servers and
    fio run at the highest CPU weight, so other work on the machine moves the receivers' reads less: once in ten
    runs (without it) NFS at MTU 1500 drew a second pure ACK per I/O through a whole window (8.98 frames); the
    message then names each direction's pure ACKs per I/O."""
    protocols = [p for p, spec in PROTOCOLS.items() if spec.lab and spec.engine and spec.tcp]
    assert sorted(protocols) == sorted(REQUEST_FRAME), protocols  # a new lab protocol fio reaches needs its request
    configs = [(f"{p}-{m}", p, m) for m in MTUS for p in protocols]
    text = (f'name = "acks"\nbaseline = "{configs[0][0]}"\n'
            '[[workloads]]\nname = "r8k"\nblock_size = 8192\nread_pct = 100\nrandom_pct = 100\noio = 1\n'
            + "".join(f'[[configurations]]\nname = "{n}"\ntarget = "lab:{p}"\nlink = {{ mtu = {m} }}\n'
                      for n, p, m in configs)
            + f'[lab]\nprefix = "{PREFIX}"\npool_size = "1G"\nexport_size = "64M"\n'
            '[lab.link]\nrate = "1GbE"\nmtu = 1500\noffloads = false\n'
            '[[load_points]]\nstreams = 1\noio = 1\n'
            '[method]\nwarmup = "1s"\nduration = "2s"\nrepeats = 1\ndata_size = "16M"\ncpu_priority = "high"\n')
    dumps: dict[str, subprocess.Popen] = {}
    storage: list[str] = []

    def on_cell(stage, cell, testbed):
        name = cell.configuration.name
        if stage == "ready":
            names = testbed.lab.names
            storage[:] = [names.storage_address(0)]
            p = subprocess.Popen(["ip", "netns", "exec", names.storage_ns, "tcpdump", "-i",
                                  names.storage_link(0).near.ifname, "-nn", "-s", "96", "-B", "65536", "-w",
                                  str(tmp_path / f"{name}.pcap"), "tcp"], stderr=subprocess.PIPE, text=True)
            dumps[name] = p
            assert p.stderr is not None and "listening on" in p.stderr.readline()  # capturing before the window
        elif stage == "done" and name in dumps:
            dumps[name].send_signal(signal.SIGINT)
            dumps[name].communicate(timeout=30)

    try:
        rundir = Study(load_plan_text(text), text, "test", results_root=tmp_path / "r", lab_workdir=workdir,
                       on_cell=on_cell).run()
    finally:
        for p in dumps.values():
            if p.poll() is None:
                p.kill()
                p.communicate()
    recs = {r.configuration: r for r in rundir.records()}
    assert sorted(recs) == sorted(n for n, _, _ in configs)
    seen = []
    for name, protocol, mtu in configs:
        r, f = recs[name], figures(recs[name])
        assert r.result.errors == 0 and f.ios > 0 and f.packets_counted_as == "frames", (name, f.packets_counted_as)
        model = wire_cost(protocol, block_size=8192, read_pct=100, mtu=mtu, oio=r.oio_per_stream)
        frames, nbytes, requests, up, down = _capture(tmp_path / f"{name}.pcap", storage[0], REQUEST_FRAME[protocol])
        q = max(requests, 1)
        seen.append((name, model.frames, frames / q, f.packets_per_io, nbytes / max(frames, 1),
                     f.wire_bytes_per_io / f.packets_per_io, requests, f"{up / q:.3f} and {down / q:.3f}"))
    print("\n" + "\n".join(f"{n}: model {m:.3f} frames per I/O; capture {c:.3f} ({100 * (c / m - 1):+.1f} %), "
                           f"counters {k:.3f} ({100 * (k / m - 1):+.1f} %); {cb:.1f} and {kb:.1f} B per frame; "
                           f"{q} requests; pure ACKs per I/O to storage and to the host {a}"
                           for n, m, c, k, cb, kb, q, a in seen))
    for name, model, capture, counters, capture_frame, counted_frame, requests, acks in seen:
        assert requests > 500, (name, requests)
        assert capture == pytest.approx(model, rel=0.05), (name, capture, model, f"pure ACKs {acks}")
        assert counters == pytest.approx(model, rel=0.05), (name, counters, model)
        assert counted_frame == pytest.approx(capture_frame, rel=0.02), (name, counted_frame, capture_frame)
