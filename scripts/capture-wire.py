#!/usr/bin/env python3
"""Capture what one iSCSI/NBD I/O puts on the lab's wire, for the wire model's test data.

Brings up a small embedded lab (prefix 'plc', offloads off so that every packet is a
frame), runs fio in the host namespace against the export for a few seconds while
tcpdump records the storage port, and prints a JSON summary per case: I/Os (fio's own
count), frames and bytes (Ethernet header + IP packet, as tcpdump's 'length') in each
direction, data frames, pure ACKs, and the frame sizes seen. Root; needs tcpdump.

    sudo .venv/bin/python scripts/capture-wire.py > tests/data/wire-capture.json
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
from protolab.lab import Lab
from protolab.plan.topology import LabSpec

CASES = [("iscsi", 8192, "randread", 1500), ("iscsi", 8192, "randread", 9000), ("iscsi", 65536, "read", 1500),
         ("nbd", 8192, "randread", 1500), ("nbd", 65536, "read", 1500)]
LINE = re.compile(r"^\S+ IP (\S+)\.(\d+) > (\S+)\.(\d+): .*length (\d+)")


def summary(pcap: Path, storage_ip: str) -> dict:
    out = subprocess.run(["tcpdump", "-r", str(pcap), "-nn", "-tt", "-v"], capture_output=True, text=True).stdout
    frames = {"to_host": 0, "to_storage": 0}
    bytes_ = {"to_host": 0, "to_storage": 0}
    acks = {"to_host": 0, "to_storage": 0}
    sizes: Counter = Counter()
    # with -v, tcpdump prints the IP total length on the first line and the TCP payload length on the second
    text = out.replace("\n    ", " ")
    for ln in text.splitlines():
        m = re.search(r"length (\d+)\)\s+(\S+)\.(\d+) > (\S+)\.(\d+):.*?length (\d+)", ln)
        if not m:
            continue
        ip_len, src, payload = int(m.group(1)), m.group(2), int(m.group(6))
        d = "to_host" if src == storage_ip else "to_storage"
        frames[d] += 1
        bytes_[d] += ip_len + 14
        sizes[ip_len + 14] += 1
        if payload == 0:
            acks[d] += 1
    return {"frames": frames, "bytes": bytes_, "pure_acks": acks,
            "frame_sizes": dict(sorted(sizes.items(), key=lambda kv: -kv[1])[:8])}


def main() -> None:
    fio = Fio.locate()
    results = []
    for proto, bs, rw, mtu in CASES:
        workdir = Path(tempfile.mkdtemp(prefix="plc-"))
        spec = LabSpec.model_validate({"prefix": "plc", "pool_size": "1G", "export_size": "128M",
                                       "link": {"rate": "1GbE", "mtu": mtu, "offloads": False}})
        lab = Lab(spec, {proto}, workdir)
        try:
            lab.up()
            ep = lab.endpoint(proto)
            storage_ip = lab.names.storage_address(0)
            iface = lab.names.storage_link(0).near.ifname
            target = (f"ioengine=libiscsi\nfilename={ep.url.replace(':', chr(92) + ':')}" if proto == "iscsi"
                      else f"ioengine=nbd\nuri={ep.url}")
            job = workdir / "job.fio"
            job.write_text(f"[j]\n{target}\nrw={rw}\nbs={bs}\niodepth=4\nsize=64M\ntime_based=1\nruntime=3\n")
            pcap = workdir / "cap.pcap"
            dump = subprocess.Popen(["ip", "netns", "exec", lab.names.storage_ns, "tcpdump", "-i", iface, "-s", "128",
                                     "-w", str(pcap), "-U", "tcp"], stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            out = subprocess.run(["ip", "netns", "exec", ep.netns, fio.path, str(job), "--output-format=json"],
                                 capture_output=True, text=True, timeout=60)
            time.sleep(0.5)
            dump.terminate()
            dump.wait(10)
            ios = json.loads(out.stdout[out.stdout.index("{"):])["jobs"][0]["read"]["total_ios"]
            s = summary(pcap, storage_ip)
            results.append({"protocol": proto, "block_size": bs, "rw": rw, "mtu": mtu, "iodepth": 4, "ios": ios,
                            **s, "frames_per_io": round(sum(s["frames"].values()) / ios, 3),
                            "pure_acks_per_io": round(sum(s["pure_acks"].values()) / ios, 3)})
            print(f"{proto} {bs} {rw} mtu {mtu}: {results[-1]['frames_per_io']} frames/IO", file=sys.stderr)
        finally:
            lab.down()
            shutil.rmtree(workdir, ignore_errors=True)
    json.dump({"captured_with": "scripts/capture-wire.py (tcpdump on the storage port, offloads off, fio "
               f"{fio.version()}, 1GbE tbf)", "cases": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
