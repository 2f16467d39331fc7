#!/usr/bin/env python3
"""Capture what 8 KiB random iSCSI reads put on the lab's wire, and keep a small summary.

Builds a one-host lab (offloads off, so the capture sees real frames) at MTU 1500
and 9000, runs fio's libiscsi engine from the host while tcpdump captures on the
storage port, and writes tests/data/wire-capture-iscsi-8k.json: per MTU and queue
depth, the frames, their size histogram (Ethernet header + IP packet, as tcpdump
reports them), the pure ACKs in each direction and fio's I/O count.

    PYTHONPATH=src .venv/bin/python scripts/capture-wire.py [--out FILE] [--prefix plw]

Needs root, tcpdump and the lab's programs; the lab is torn down whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from protolab.lab import Lab
from protolab.plan.topology import LabSpec

ROOT = Path(__file__).resolve().parents[1]
FIO = ROOT / ".deps/fio/bin/fio"


def read_pcap(path: Path, storage_ip: str) -> dict:
    """Frames of a pcap (Ethernet, IPv4/TCP) summarised: sizes, directions, pure ACKs."""
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    pos, sizes = 24, Counter()
    frames = {"to_storage": 0, "to_host": 0}
    acks = {"to_storage": 0, "to_host": 0}
    payload = {"to_storage": 0, "to_host": 0}
    storage = bytes(int(x) for x in storage_ip.split("."))
    while pos + 16 <= len(data):
        _, _, incl, orig = struct.unpack(endian + "IIII", data[pos:pos + 16])
        pkt = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if len(pkt) < 54 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue  # only IPv4/TCP
        ihl = (pkt[14] & 0x0F) * 4
        total = struct.unpack(">H", pkt[16:18])[0]
        tcp = 14 + ihl
        doff = (pkt[tcp + 12] >> 4) * 4
        flags = pkt[tcp + 13]
        direction = "to_storage" if pkt[30:34] == storage else "to_host"
        tcp_payload = total - ihl - doff
        frames[direction] += 1
        sizes[orig] += 1
        payload[direction] += tcp_payload
        if tcp_payload == 0 and not flags & 0x07:  # no SYN/FIN/RST: a pure ACK
            acks[direction] += 1
    return {"frames": sum(frames.values()), "frames_by_direction": frames, "pure_acks": acks,
            "tcp_payload_bytes": payload, "frame_sizes": {str(k): v for k, v in sorted(sizes.items())}}


def capture(lab: Lab, iodepth: int, seconds: int, tmp: Path) -> dict:
    """One fio run under tcpdump; the summary of its frames and I/Os."""
    names = lab.names
    port = names.storage_link(0)
    ep = lab.endpoint("iscsi")
    pcap = tmp / f"mtu{lab.link.mtu}-qd{iodepth}.pcap"
    dump = subprocess.Popen(["ip", "netns", "exec", names.storage_ns, "tcpdump", "-i", port.near.ifname,
                             "-s", "96", "-w", str(pcap), "-U", "tcp port 3260"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)  # tcpdump is listening once it has opened the interface
        url = ep.url.replace(":", "\\:")
        out = tmp / "fio.json"
        subprocess.run(["ip", "netns", "exec", ep.netns, str(FIO), "--name=cap", "--ioengine=libiscsi",
                        f"--filename={url}", "--rw=randread", "--bs=8k", f"--iodepth={iodepth}",
                        "--time_based", f"--runtime={seconds}", "--output-format=json", f"--output={out}"],
                       check=True, timeout=seconds + 60, capture_output=True)
        time.sleep(0.5)
    finally:
        dump.send_signal(signal.SIGINT)
        dump.wait(timeout=10)
    job = json.loads(out.read_text())["jobs"][0]
    summary = read_pcap(pcap, port.address.split("/")[0])
    # Reads send only 48 B command PDUs to storage: their bytes count the I/Os the capture saw
    # (fio's own count also has I/Os outside the capture's first and last moments).
    ios = summary["tcp_payload_bytes"]["to_storage"] / 48
    return {"mtu": lab.link.mtu, "iodepth": iodepth, "ios": round(ios, 2), "fio_ios": int(job["read"]["total_ios"]),
            "block_size": 8192, "rw": "randread", **summary, "frames_per_io": summary["frames"] / ios}


def main() -> int:
    """Capture at MTU 1500 and 9000 and write the summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests/data/wire-capture-iscsi-8k.json")
    ap.add_argument("--prefix", default=f"plw{os.getpid() % 100:02d}")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--iodepth", type=int, nargs="+", default=[1, 8])
    args = ap.parse_args()
    if shutil.which("tcpdump") is None:
        sys.exit("capture-wire: tcpdump is missing; apt-get install tcpdump")
    results = []
    with tempfile.TemporaryDirectory(prefix="protolab-capture-") as tmp_s:
        tmp = Path(tmp_s)
        for mtu in (1500, 9000):
            spec = LabSpec.model_validate({"prefix": args.prefix, "pool_size": "1G", "export_size": "64M",
                                           "link": {"mtu": mtu, "offloads": False}})
            lab = Lab(spec, {"iscsi"}, tmp / f"lab{mtu}")
            try:
                lab.up()
                for qd in args.iodepth:
                    r = capture(lab, qd, args.seconds, tmp)
                    print(f"mtu {mtu} qd {qd}: {r['frames_per_io']:.2f} frames/I/O, acks {r['pure_acks']}, "
                          f"{r['ios']} I/Os", file=sys.stderr)
                    results.append(r)
            finally:
                lab.down()
    args.out.write_text(json.dumps({"source": "scripts/capture-wire.py: tcpdump on the lab's storage port, "
                                    "offloads off, fio libiscsi randread bs=8k", "captures": results},
                                   indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
