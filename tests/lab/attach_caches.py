"""Issue 45's cache step of test_attach_hosts.py, on its load guest standing for a user's host: the guest's NFS client
keeps what it read in its page cache, so a buffered read of the same data again never reaches the server (the
server guest's tap counts the bytes its knfsd sends). With `[method] drop_caches = true`, protolab drops the guest's
cache over ssh before each window: every window's first pass is served by knfsd again, seen in the same counter, and
each record says what the drop freed on the host named "guest".

The data set: 16 MiB (the guest has 512 MiB and nothing else cached on the mount). A window of 64 KiB sequential
reads starts at its beginning (and loops over it when the TCG guest is quick enough); after a drop its first pass
comes from the server, seen on the tap, the rest from the cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from conftest import sh
from protolab.lab import Lab
from protolab.results.rundir import RunDir
from protolab.vm.guestssh import GuestSsh

MIB = 2**20
DATA = 16 * MIB


def _sent(lab: Lab) -> int:
    """Bytes the server guest has sent so far (its tap's rx, in the storage namespace)."""
    r = sh(["cat", f"/sys/class/net/{lab.names.tap('st')}/statistics/rx_bytes"], netns=lab.names.storage_ns)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def _plan(lab: Lab, ssh: GuestSsh, fio_port: int) -> str:
    return f"""
name = "cold-reads"
baseline = "nfs-3"
load_points = [{{ streams = 1, oio = 1 }}]
[[workloads]]
name = "seq-64k"
block_size = "64KiB"
read_pct = 100
random_pct = 0
oio = 1
[[hosts]]
name = "guest"
agent = "ssh://root@127.0.0.1:{ssh.port}"
fio = "/bin/fio"
fio_port = {fio_port}
[[configurations]]
name = "nfs-3"
target = "filer3"
ioengine = "psync"
direct = false
[targets.filer3]
attach = {{ nfs = {{ server = "{lab.names.server_guest_address(0)}", export = "/export", version = "3" }} }}
allow_overwrite = true
[method]
prepare = false
warmup = "0s"
duration = "2s"
repeats = 2
data_size = "16M"
drop_caches = true
"""


def a_second_read_reaches_the_server_only_after_a_drop(lab: Lab, do: Callable, go: Callable, ssh: GuestSsh,
                                                       fio_port: int, tmp_path: Path) -> None:
    """The control by hand (a buffered read again is served by the guest's cache: the server sends next to nothing),
    then protolab's run with drop_caches: both windows' first pass served by the server."""
    addr = lab.names.server_guest_address(0)
    mount = f"mkdir -p /mnt/c && mount.nfs {addr}:/export /mnt/c -o vers=3,nolock && "
    w = do(mount + f"dd if=/dev/urandom of=/mnt/c/cold.dat bs=1M count={DATA // MIB} 2>/dev/null && sync && "
                   "dd if=/mnt/c/cold.dat of=/dev/null bs=64k 2>/dev/null && echo ok")
    try:
        assert w.stdout.strip().endswith("ok"), (w.stdout, w.stderr)
        before = _sent(lab)
        again = do("dd if=/mnt/c/cold.dat of=/dev/null bs=64k 2>/dev/null && echo ok")
        cached = _sent(lab) - before
        assert again.stdout.strip() == "ok" and cached < DATA // 16, f"a second read sent {cached} B: not cached"
        before = _sent(lab)
        dropped = do("sync; echo 3 > /proc/sys/vm/drop_caches; dd if=/mnt/c/cold.dat of=/dev/null bs=64k "
                     "2>/dev/null && echo ok")
        cold = _sent(lab) - before
        assert dropped.stdout.strip() == "ok" and cold >= DATA, f"after a drop the read sent only {cold} B"
    finally:
        do("rm -f /mnt/c/cold.dat; umount /mnt/c; rmdir /mnt/c")
    plan = tmp_path / "cold.toml"
    plan.write_text(_plan(lab, ssh, fio_port))
    before = _sent(lab)
    run = go(["run", str(plan), "--results", str(tmp_path / "cold")])
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err + out
    served = _sent(lab) - before
    [rundir] = list((tmp_path / "cold").iterdir())
    records = RunDir.open(rundir, write=False).records()
    assert len(records) == 2, records
    for r in records:
        [drop] = r.caches_dropped
        assert drop.host == "guest" and drop.cached_kib_before > drop.cached_kib_after, drop
        assert r.result.read.bytes > 0, r.result.read
    # The data file is there from the run before (nfs-3's); each window reads it from its start, so after its drop
    # its first pass — all of it, or what a slow guest got through in the window — is the server's. Without the
    # drops the second window would have been served by the cache (the control above).
    cold_reads = sum(min(r.result.read.bytes, DATA) for r in records)
    figures = f"the server sent {served / MIB:.1f} MiB over two windows that read " \
              f"{sum(r.result.read.bytes for r in records) / MIB:.1f} MiB ({cold_reads / MIB:.1f} MiB of first " \
              f"passes); cached before → after each drop: " \
              f"{[(d.cached_kib_before, d.cached_kib_after) for r in records for d in r.caches_dropped]} KiB"
    assert served >= 0.95 * cold_reads, figures
    stored = json.loads((rundir / "records.jsonl").read_text().splitlines()[-1])["caches_dropped"]
    assert stored[0]["host"] == "guest", stored
    print(f"\ncold reads: without a drop a second read sent {cached} B; after one {cold / MIB:.1f} MiB; {figures}")
