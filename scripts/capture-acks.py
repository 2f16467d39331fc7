#!/usr/bin/env python3
"""Capture the frames and pure ACKs one I/O puts on the lab's wire, for the wire model's ACK rule (analysis.wire_tcp).

Brings up one embedded lab (prefix 'plx', 1GbE, offloads off so that every packet is a frame) serving iSCSI, NFS
and NBD; for each MTU, protocol and load runs fio in the host namespace for 2 s while tcpdump records the storage
port, and prints a JSON list with, per case: fio's I/O count, frames, bytes (Ethernet header + IP packet), data
frames and pure ACKs in each direction, and the frame sizes seen. Root; needs tcpdump.

    sudo .venv/bin/python scripts/capture-acks.py [PROTOCOLS [MTUS [RATE [LOADS]]]] > acks.json

LOADS: comma-separated bs:rw:iodepth:jobs, e.g. 8192:randread:8:2 (default: 4 and 8 KiB random reads, an 8 KiB
random write, 64 KiB sequential reads, each with one I/O in flight and with 16).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from protolab.engine.fio import Fio
from protolab.engine.targets import resolve
from protolab.lab import Lab
from protolab.plan.topology import LabSpec, LinkSpec

PROTOS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["iscsi", "nfs", "nbd"]
MTUS = [int(m) for m in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1500, 9000]
RATE = sys.argv[3] if len(sys.argv) > 3 else "1GbE"
LOADS = [(4096, "randread", 1, 1), (4096, "randread", 16, 1), (8192, "randread", 1, 1), (8192, "randread", 8, 2),
         (8192, "randwrite", 1, 1), (8192, "randwrite", 8, 2), (65536, "read", 1, 1), (65536, "read", 8, 2)]
if len(sys.argv) > 4:
    LOADS = [(int(b), rw, int(q), int(j)) for b, rw, q, j in (x.split(":") for x in sys.argv[4].split(","))]
# with -v, tcpdump prints the IP total length on the first line and the TCP payload length on the second
PACKET = re.compile(r"length (\d+)\)\s+(\S+)\.(\d+) > (\S+)\.(\d+):.*?length (\d+)")


def summary(pcap: Path, storage_ip: str) -> dict:
    out = subprocess.run(["tcpdump", "-r", str(pcap), "-nn", "-v"], capture_output=True, text=True).stdout
    frames: Counter = Counter()
    acks: Counter = Counter()
    data: Counter = Counter()
    sizes: Counter = Counter()
    nbytes: Counter = Counter()
    for ln in out.replace("\n    ", " ").splitlines():
        m = PACKET.search(ln)
        if not m:
            continue
        ip_len, src, payload = int(m.group(1)), m.group(2), int(m.group(6))
        d = "to_host" if src == storage_ip else "to_storage"
        frames[d] += 1
        nbytes[d] += ip_len + 14
        sizes[ip_len + 14] += 1
        (acks if payload == 0 else data)[d] += 1
    return {"frames": dict(frames), "bytes": dict(nbytes), "pure_acks": dict(acks), "data": dict(data),
            "frame_sizes": dict(sizes.most_common(8))}


def one(lab: Lab, fio: Fio, workdir: Path, proto: str, load: tuple[int, str, int, int], mtu: int) -> dict | None:
    bs, rw, oio, jobs = load
    if proto == "nfs" and bs == 65536 and oio > 2:
        oio = 2  # fio 3.33's nfs engine hangs on 64 KiB sequential reads deeper than that (LAB-NOTES)
    ep = lab.endpoint(proto)
    acc = resolve(ep.url, size=ep.size_bytes, ioengine=None, direct=True, netns=ep.netns, owned=True)
    opts = "".join(f"{k}={v}\n" for k, v in acc.options.items())
    name = f"filename={acc.filename}\n" if acc.filename else ""
    job = workdir / "job.fio"
    job.write_text(f"[j]\nioengine={acc.ioengine}\n{opts}{name}rw={rw}\nbs={bs}\niodepth={oio}\nnumjobs={jobs}\n"
                   "group_reporting=1\nsize=64M\ntime_based=1\nruntime=2\n")
    pcap = workdir / "cap.pcap"
    dump = subprocess.Popen(["ip", "netns", "exec", lab.names.storage_ns, "tcpdump", "-i",
                             lab.names.storage_link(0).near.ifname, "-s", "128", "-B", "65536", "-w", str(pcap),
                             "-U", "tcp"], stderr=subprocess.PIPE, text=True)
    assert dump.stderr is not None
    dump.stderr.readline()  # "listening on …": capturing before fio starts
    try:
        out = subprocess.run(["ip", "netns", "exec", ep.netns, fio.path, str(job), "--output-format=json"],
                             capture_output=True, text=True, timeout=40)
    except subprocess.TimeoutExpired:
        print(f"timeout: {proto} {bs} {rw} {jobs}x{oio}", file=sys.stderr)
        return None
    finally:
        time.sleep(0.5)
        dump.terminate()
        dump.wait(10)
    j = json.loads(out.stdout[out.stdout.index("{"):])["jobs"][0]
    ios = j["read"]["total_ios"] + j["write"]["total_ios"]
    s = summary(pcap, lab.names.storage_address(0))
    return {"protocol": proto, "block_size": bs, "rw": rw, "mtu": mtu, "iodepth": oio, "jobs": jobs, "ios": ios, **s,
            "frames_per_io": round(sum(s["frames"].values()) / ios, 3)}


def main() -> None:
    fio = Fio.locate()
    workdir = Path(tempfile.mkdtemp(prefix="plx-", dir="/var/tmp"))
    spec = LabSpec.model_validate({"prefix": "plx", "pool_size": "1G", "export_size": "128M",
                                   "link": {"rate": RATE, "mtu": MTUS[0], "offloads": False}})
    lab = Lab(spec, set(PROTOS), workdir)
    results = []
    try:
        lab.up()
        for mtu in MTUS:
            lab.set_link(LinkSpec(rate=RATE, mtu=mtu, offloads=False))
            for proto in PROTOS:
                for load in LOADS:
                    r = one(lab, fio, workdir, proto, load, mtu)
                    if r is not None:
                        results.append(r)
                        print(f"{proto} MTU {mtu} {load}: {r['frames_per_io']} frames/IO", file=sys.stderr)
    finally:
        lab.down()
        shutil.rmtree(workdir, ignore_errors=True)
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
