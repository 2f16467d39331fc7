#!/usr/bin/env python3
"""Capture what one NVMe/TCP I/O puts on the wire, for the wire model's test data (a real kernel session).

This machine's kernel has no nvmet or nvme-tcp; the Debian guest kernel protolab boots has both. The script
builds a one-off initramfs from the project's guest image (.deps/guest, `make test-deps`) with the NVMe target
and host modules, brd, tcpdump and ethtool added, and boots it under QEMU (TCG, no network). In the guest: a
brd RAM disk is exported by nvmet-tcp on 127.0.0.1:4420 (configfs, no tools), the kernel's nvme-tcp host
connects to it (/dev/nvme-fabrics), and for each case fio (libaio, direct, OIO 4) runs 4 s on /dev/nvme0n1
while tcpdump records port 4420 on the loopback interface with its MTU set to the case's and segmentation
offloads off (every packet is a frame). The guest sums the capture with awk (frames, bytes as Ethernet header
+ IP packet, pure ACKs, frame sizes per direction) and prints it with fio's I/O count on the serial console;
the host prints one JSON document:

    sudo .venv/bin/python scripts/capture-nvme-tcp.py > tests/data/wire-capture-nvme-tcp.json

Figures from a TCG guest measure emulation; frames and bytes per I/O do not depend on speed (only the pure
ACKs do, a little: they depend on timing).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUEST = ROOT / ".deps" / "guest"
NQN = "nqn.2026-11.lab.protolab:capture"
#: (name, fio rw, block size, MTU of the loopback interface)
CASES = [("4k-randread", "randread", 4096, 1500), ("4k-randwrite", "randwrite", 4096, 1500),
         ("8k-randread", "randread", 8192, 1500), ("8k-randread-9000", "randread", 8192, 9000),
         ("64k-read", "read", 65536, 1500), ("64k-write", "write", 65536, 1500)]
MODULES = ["brd", "nvmet-tcp", "nvme-tcp"]
# per packet of `tcpdump -nn -v`: line 1 has the IP total length, line 2 "SRC.PORT > DST.PORT: ... length N"
AWK = r"""
/proto TCP/ { if (match($0, /length [0-9]+\)/)) { ip = substr($0, RSTART + 7, RLENGTH - 8) + 0 }; next }
/ > / && ip > 0 {
  d = ($1 ~ /\.4420$/) ? "to_host" : "to_storage"
  n = split($0, w, " "); pay = w[n] + 0
  frames[d]++; bytes[d] += ip + 14; if (pay == 0) acks[d]++; sizes[ip + 14]++; ip = 0
}
END {
  printf "{\"frames\": {\"to_host\": %d, \"to_storage\": %d}, ", frames["to_host"], frames["to_storage"]
  printf "\"bytes\": {\"to_host\": %d, \"to_storage\": %d}, ", bytes["to_host"], bytes["to_storage"]
  printf "\"pure_acks\": {\"to_host\": %d, \"to_storage\": %d}, \"frame_sizes\": {", acks["to_host"], acks["to_storage"]
  sep = ""; for (s in sizes) { printf "%s\"%d\": %d", sep, s, sizes[s]; sep = ", " }
  print "}}"
}
"""


def _init(cases: list[tuple[str, str, int, int]]) -> str:
    runs = []
    for name, rw, bs, mtu in cases:
        runs.append(f"""
ip link set lo mtu {mtu}
tcpdump -Z root -i lo -nn -s 128 -w /tmp/{name}.pcap 'tcp port 4420' 2>/tmp/{name}.tcpdump &
TD=$!
sleep 1
fio --name={name} --filename=$DEV --direct=1 --ioengine=libaio --iodepth=4 --rw={rw} --bs={bs} --size=192m \\
    --runtime=4 --time_based --output-format=json > /tmp/{name}.json 2>/tmp/{name}.err
sleep 1
kill -INT $TD; wait $TD
echo "CASE {name} {rw} {bs} {mtu}" > /dev/console
tcpdump -Z root -r /tmp/{name}.pcap -nn -v 2>/dev/null | awk -f /etc/sum.awk > /dev/console
echo "FIO $(tr -d '\\n' < /tmp/{name}.json)" > /dev/console
""")
    return f"""#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
exec 2>/dev/console
for m in $(cat /etc/capture-modules); do
  case $m in brd.ko) insmod /lib/modules/$m rd_nr=1 rd_size=262144 ;; *) insmod /lib/modules/$m ;; esac
done
mount -t configfs none /sys/kernel/config
ip link set lo up
ethtool -K lo tso off gso off gro off >/dev/null 2>&1
S=/sys/kernel/config/nvmet/subsystems/{NQN}
mkdir $S && echo 1 > $S/attr_allow_any_host
mkdir $S/namespaces/1 && echo /dev/ram0 > $S/namespaces/1/device_path && echo 1 > $S/namespaces/1/enable
P=/sys/kernel/config/nvmet/ports/1
mkdir $P && echo ipv4 > $P/addr_adrfam && echo tcp > $P/addr_trtype && echo 127.0.0.1 > $P/addr_traddr \\
  && echo 4420 > $P/addr_trsvcid && ln -s $S $P/subsystems/{NQN}
echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn={NQN},nr_io_queues=1" > /dev/nvme-fabrics
sleep 2
DEV=/dev/$(ls /sys/block | grep -E '^nvme[0-9]+n[0-9]+$' | head -1)
T=$(cat /sys/class/nvme/nvme0/transport 2>/dev/null)
echo "DEVICE $DEV $T inline=$(cat $P/param_inline_data_size 2>/dev/null)" > /dev/console
{''.join(runs)}
echo "DONE" > /dev/console
dmesg | tail -20 > /dev/console
cat /tmp/*.tcpdump /tmp/*.err > /dev/console
echo 1 > /sys/class/nvme/nvme0/delete_controller
poweroff -f
"""


def _copy_with_libs(binary: str, stage: Path) -> None:
    path = shutil.which(binary) or sys.exit(f"capture-nvme-tcp: no {binary}; apt-get install {binary}")
    shutil.copy2(path, stage / "bin" / binary)
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    for lib in re.findall(r"(/\S+\.so[^\s]*)", out):
        dest = stage / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copy2(os.path.realpath(lib), dest)


def build_image(stage: Path, kver: str, cases) -> Path:
    """The guest image's files plus the capture's modules, tools and init, as a gzip'd newc cpio."""
    subprocess.run(["cpio", "-idm", "--quiet"], input=gzip.decompress((GUEST / "initramfs.cpio.gz").read_bytes()),
                   cwd=stage, check=True)
    names = []
    for m in MODULES:
        deps = subprocess.run(["modprobe", "-S", kver, "--show-depends", m], capture_output=True, text=True,
                              check=True).stdout
        for ko in re.findall(r"^insmod (\S+)", deps, re.M):
            name = Path(ko).name
            if name not in names:
                shutil.copy2(ko, stage / "lib" / "modules" / name)
                names.append(name)
    (stage / "etc" / "capture-modules").write_text("\n".join(names) + "\n")
    for tool in ("tcpdump", "ethtool"):
        _copy_with_libs(tool, stage)
    (stage / "etc" / "sum.awk").write_text(AWK)
    (stage / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")  # tcpdump -Z root looks it up
    (stage / "etc" / "group").write_text("root:x:0:\n")
    init = stage / "init"
    init.write_text(_init(cases))
    init.chmod(0o755)
    image = stage.parent / "capture.cpio.gz"
    files = subprocess.run(["find", "."], cwd=stage, capture_output=True, check=True).stdout
    cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=stage, input=files, capture_output=True,
                          check=True).stdout
    image.write_bytes(gzip.compress(cpio, 1))
    return image


def parse(console: str) -> dict:
    """The cases the guest printed: summary, fio's I/O count, per-I/O figures."""
    cases, current, device = [], None, ""
    for line in console.splitlines():
        if line.startswith("DEVICE "):
            device = line.split(" ", 1)[1]
        elif line.startswith("CASE "):
            name, rw, bs, mtu = line.split()[1:5]
            current = {"case": name, "protocol": "nvme-tcp", "rw": rw, "block_size": int(bs), "mtu": int(mtu),
                       "iodepth": 4}
        elif line.startswith("{\"frames\"") and current is not None:
            current.update(json.loads(line))
        elif line.startswith("FIO ") and current is not None:
            job = json.loads(line[4:])["jobs"][0]
            ios = job["read"]["total_ios"] + job["write"]["total_ios"]
            frames = current["frames"]["to_host"] + current["frames"]["to_storage"]
            acks = current["pure_acks"]["to_host"] + current["pure_acks"]["to_storage"]
            current.update(ios=ios, frames_per_io=round(frames / ios, 3), pure_acks_per_io=round(acks / ios, 3),
                           frame_sizes=dict(sorted(current["frame_sizes"].items(), key=lambda kv: -kv[1])[:8]))
            cases.append(current)
            current = None
    return {"device": device, "cases": cases}


def main() -> int:
    if os.geteuid() != 0:
        print("capture-nvme-tcp: run as root (QEMU, modules from /lib/modules)", file=sys.stderr)
        return 2
    kver = json.loads((GUEST / "guest.json").read_text())["kernel"]
    fio = json.loads((GUEST / "guest.json").read_text())["fio"]
    with tempfile.TemporaryDirectory(prefix="protolab-capture-") as tmp:
        stage = Path(tmp) / "root"
        stage.mkdir()
        image = build_image(stage, kver, CASES)
        p = subprocess.run(["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", "1024",
                            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                            "-kernel", str(GUEST / "vmlinuz"), "-initrd", str(image),
                            "-append", "console=ttyS0 quiet panic=-1", "-serial", "stdio"],
                           capture_output=True, text=True, timeout=900)
    console = p.stdout.replace("\r", "")
    if len(sys.argv) > 2 and sys.argv[1] == "--console":  # keep the guest's console to read it
        Path(sys.argv[2]).write_text(console)
    try:
        if "DONE" not in console:
            raise ValueError("the guest did not finish")
        data = parse(console)
    except (ValueError, KeyError, ZeroDivisionError) as e:
        print(f"capture-nvme-tcp: {e}; the guest's console:\n{console[-6000:]}", file=sys.stderr)
        return 1
    print(json.dumps({"captured_with": f"scripts/capture-nvme-tcp.py (Debian guest kernel {kver}, nvmet-tcp and "
                                       f"nvme-tcp over the guest's loopback, offloads off, {fio}, libaio, TCG)",
                      **data}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
