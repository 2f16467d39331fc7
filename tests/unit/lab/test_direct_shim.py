"""protolab-direct.so (the real library, built by 'make deps'): reads and writes through it return the same bytes,
aligned or not, and only a btrfs file gets an O_DIRECT twin (the lab test tests/lab/test_nfs_direct.py shows
NFS-Ganesha's reads and writes meeting the device model through it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from protolab.lab.device import find_direct_lib

PROBE = r"""
import json, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
block = bytes(range(256)) * 16
os.pwritev(fd, [block[:1000], block[1000:]], 8192)            # aligned, two buffers
os.pwrite(fd, b"odd", 5)                                      # unaligned: the file's own descriptor
got = bytearray(4096)
n = os.preadv(fd, [memoryview(got)[:3000], memoryview(got)[3000:]], 8192)
short = os.pread(fd, 4096, 12288)                             # past the end: 0 bytes, as without the library
flags = []
for name in os.listdir("/proc/self/fd"):
    try:
        if os.path.realpath(f"/proc/self/fd/{name}") == os.path.realpath(path):
            flags.append(int(open(f"/proc/self/fdinfo/{name}").read().split("flags:")[1].split()[0], 8))
    except OSError:
        pass
print(json.dumps({"n": n, "same": bytes(got) == block, "odd": os.pread(fd, 3, 5).decode(), "short": len(short),
                  "direct": sum(1 for f in flags if f & os.O_DIRECT), "fds": len(flags)}))
"""


def test_reads_and_writes_through_the_library_keep_their_bytes(tmp_path):
    lib = find_direct_lib()
    if lib is None:
        pytest.skip("protolab-direct.so is not built; run 'make deps'")
    target = tmp_path / "data"
    env = {**os.environ, "LD_PRELOAD": str(lib)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(target)], capture_output=True, text=True, env=env,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["n"] == 4096 and out["same"] and out["odd"] == "odd" and out["short"] == 0, out
    fstype = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    # a twin opened O_DIRECT beside the file's own descriptor on btrfs (the lab's pool); none elsewhere
    assert (out["direct"], out["fds"]) == ((1, 2) if fstype == "btrfs" else (0, 1)), (fstype, out)
