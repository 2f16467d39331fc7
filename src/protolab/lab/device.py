"""The pool's device model: protolab-blockdev serves the pool image through FUSE with the model applied, and the
loop device (direct I/O) and btrfs sit on top, so the local path and every protocol server go through it.

Why a daemon of our own (src/protolab/lab/blockdev/protolab-blockdev.c): nbdkit's delay filter through nbdfuse
kept ~4 requests in flight (measured), and this kernel has no device-mapper, null_blk, ublk or NBD module. The
daemon raises FUSE's max_background at INIT (the default, 12, would cap the model's parallelism), answers every
request from a timer thread at the time the model gives it, and learns how late its timer wakes.

At start-up the rest of the stack's own time per request (FUSE, loop, the kernel's wake-ups on this machine) is
measured at 1 outstanding I/O with direct reads of a file on the pool (btrfs, the loop device, FUSE: as every path
meets them; the median, not the mean), with the daemon answering at once, and handed to the daemon, which counts
each request as issued that much earlier: the host then sees the model's service time, and parallelism / service time
at saturation. Nothing else is changed by it.
"""

from __future__ import annotations

import mmap
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from ..errors import ToolError
from ..plan.storage import StorageSpec
from ..proc import Runner
from ..trust import check_library, check_program, open_nofollow, project_deps
from .procs import Processes, wait_until
from .record import Resource

BINARY = "protolab-blockdev"
TIMEOUT = 20.0
PROBE_SECONDS = 1.0
PROBE_BLOCK = 4096


#: What sits between each server and the device model: a page cache above the model hides it from that path.
SERVER_CACHE: dict[str | None, str] = {
    None: "none: fio opens the pool's file with direct I/O (a configuration's direct = true, the default)",
    "tgt": "none: tgt opens the LUN with O_DIRECT (bsoflags=direct)",
    "nbdkit": "page cache dropped after each access (nbdkit file plugin, cache=none)",
    "ganesha": "none for whole 4 KiB blocks: NFS-Ganesha's VFS FSAL has no direct-I/O option, so protolab-direct.so "
               "(preloaded) sends its block-aligned reads and writes to an O_DIRECT twin of the file; other sizes "
               "go through the host's page cache",
}


#: With a write-back cache in the model (an array's NVRAM), a stable NFS write is acknowledged once the data is
#: written, as such an array does: NFS-Ganesha's fsync calls are no-ops (libeatmydata, which reaches its VFS module
#: because protolab-direct.so loads that module without RTLD_DEEPBIND); else each stable write would cost a btrfs
#: log commit — several device writes one after the other, the file's fsyncs serialised — where the array logged it
#: once.
GANESHA_WRITE_BACK = ("; its stable writes and commits are acknowledged without an fsync (libeatmydata), as the "
                      "model's write-back cache acknowledges the block paths' writes")
#: Where Debian's libeatmydata1 puts the library (root's, checked before use).
EATMYDATA = Path("/usr/lib/x86_64-linux-gnu/libeatmydata.so.1")
#: NFS-Ganesha's direct-I/O shim (src/protolab/lab/blockdev/protolab-direct.c), built beside the daemon.
DIRECT_LIB = "protolab-direct.so"


def path_caches(servers: dict[str, str | None], write_back: bool = False) -> dict[str, str]:
    """The cache each path had above the device model, by protocol (``servers``: protocol → its server;
    ``write_back``: the model acknowledges writes from a write-back cache)."""
    return {p: SERVER_CACHE.get(server, "unknown: this server's cache is not described")
            + (GANESHA_WRITE_BACK if write_back and server == "ganesha" else "") for p, server in servers.items()}


def find_direct_lib() -> Path | None:
    """protolab-direct.so from the project's build (.deps/blockdev/lib), checked as a program is; None if not built."""
    candidate = project_deps() / "blockdev" / "lib" / DIRECT_LIB
    if not candidate.is_file():
        return None
    return check_library(candidate, DIRECT_LIB)


def ganesha_preload(spec: StorageSpec) -> str | None:
    """LD_PRELOAD for NFS-Ganesha over a device model (None over the RAM pool): protolab-direct.so, so that its
    reads and writes meet the model as tgt's and fio's do, and with a write-back model libeatmydata for its
    fsyncs. Each is a root-owned file under root-owned directories, never named by a plan."""
    if spec.is_ram:
        return None
    lib = find_direct_lib()
    if lib is None:
        raise ToolError(f"lab.storage: the device model needs {DIRECT_LIB} for NFS-Ganesha's direct I/O; "
                        "run 'make deps' (it builds it beside protolab-blockdev)")
    libs = [str(lib)]
    if spec.write_us > 0:
        if not EATMYDATA.exists():
            raise ToolError(f"lab.storage: a write-back device model needs {EATMYDATA} for NFS-Ganesha's stable "
                            "writes; run 'make deps' (Debian's eatmydata), or set write_time = 'none'")
        libs.append(str(check_library(EATMYDATA, "libeatmydata")))
    return ":".join(libs)


def describe(spec: StorageSpec, servers: dict[str, str | None], overhead_us: float | None) -> dict:
    """The device model as the run's testbed description keeps it (the report's Environment reads it)."""
    out: dict = {"model": spec.name, "figures": spec.summary(), "source": spec.source}
    if not spec.is_ram:
        out["caches"] = path_caches(servers, spec.write_us > 0)
        out["overhead_us"] = overhead_us
    return out


def find_blockdev() -> tuple[str | None, str]:
    """The daemon's path and where it came from: $PROTOLAB_BLOCKDEV or the project's build (.deps/blockdev)."""
    env = os.environ.get("PROTOLAB_BLOCKDEV")
    if env:
        return str(check_program(env, "PROTOLAB_BLOCKDEV")), "PROTOLAB_BLOCKDEV"
    candidate = project_deps() / "blockdev" / "bin" / BINARY
    if candidate.is_file():
        return str(check_program(candidate, BINARY)), "project build (.deps/blockdev)"
    return None, "not found"


def fuse_available() -> bool:
    """Whether this kernel offers FUSE (/dev/fuse)."""
    return os.path.exists("/dev/fuse")


def daemon_argv(binary: str, mountpoint: Path, backing: Path, disk: str, spec: StorageSpec,
                overhead_us: float) -> list[str]:
    """The daemon's command line: where, what, and the model's figures in ns, bytes and bytes/s."""
    return [binary, str(mountpoint), str(backing), disk, f"{spec.service_us * 1000:.0f}",
            f"{spec.spread_us * 1000:.0f}", str(spec.servers), f"{spec.throughput_bps or 0:.0f}",
            str(spec.cache_bytes), f"{overhead_us * 1000:.0f}", f"{spec.write_us * 1000:.0f}"]


@dataclass
class BlockDevice:
    """The FUSE daemon of one lab: started, probed, restarted with the stack's overhead; recorded for teardown."""

    runner: Runner
    procs: Processes
    spec: StorageSpec
    image: Path
    mountpoint: Path  # <workdir>/<prefix>-mnt/<prefix>-dev: the daemon's FUSE mount
    disk: str  # the one file it serves: <prefix>-disk (a name teardown can find)

    @property
    def served(self) -> Path:
        """The file the loop device is attached to."""
        return self.mountpoint / self.disk

    def start(self, overhead_us: float = 0.0, probe: bool = False) -> Resource:
        """Mount the model (recorded first: the FUSE mount, then the daemon's process); ``probe``: with no service
        time at all, to measure what the rest of the stack adds."""
        binary, _ = find_blockdev()
        if binary is None:
            raise ToolError(f"lab.storage: {BINARY} is not built; run 'make deps' (it needs libfuse3-dev), or use "
                            "model = 'ram'")
        if not self.procs.record.find("mount", str(self.mountpoint)):
            self.procs.record.add("mount", str(self.mountpoint))
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        spec = StorageSpec(service_time="0us", parallelism=self.spec.servers) if probe else self.spec
        res = self.procs.start(BINARY, daemon_argv(binary, self.mountpoint, self.image, self.disk, spec,
                                                   overhead_us), None, cgroup=False)
        wait_until(BINARY, self.served.exists, TIMEOUT, lambda: self.procs.running(res),
                   lambda: self.procs.log_tail(BINARY))
        return res

    def stop(self, res: Resource) -> None:
        """Stop the daemon (it unmounts its FUSE mount on SIGTERM)."""
        self.procs.stop(res)

    PROBE_SPAN = 16 * 2**20  # the probe file: written once, then read at random

    def write_probe(self, path: Path) -> None:
        """A PROBE_SPAN file written with direct I/O (btrfs answers reads of never-written blocks without the
        device, so every block is written), created anew where nothing may be."""
        fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
        buf = mmap.mmap(-1, 2**20)
        buf.write(os.urandom(2**20))
        try:
            for off in range(0, self.PROBE_SPAN, 2**20):
                os.pwritev(fd, [buf], off)
            os.fsync(fd)
        finally:
            os.close(fd)
            buf.close()

    def probe_us(self, path: str, span: int) -> float:
        """Median time of one 4 KiB direct read at 1 outstanding I/O of ``path`` (within ``span`` bytes), over
        ~PROBE_SECONDS: the median, so that a busy moment of the machine during the probe is not taken off every
        request afterwards."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT | os.O_NOFOLLOW)
        buf = mmap.mmap(-1, PROBE_BLOCK)
        rng = random.Random(0)
        blocks = max(1, span // PROBE_BLOCK)
        times: list[float] = []
        try:
            end = time.monotonic() + PROBE_SECONDS
            while (time.monotonic() < end or len(times) < 20) and len(times) < 20_000:
                off = rng.randrange(blocks) * PROBE_BLOCK
                t0 = time.perf_counter()
                os.preadv(fd, [buf], off)
                times.append(time.perf_counter() - t0)
        finally:
            os.close(fd)
            buf.close()
        return 1e6 * median(times[5:] or times)  # the first few warm the path up

    def overhead_us(self, measured_us: float) -> float:
        """The stack's own time per request: what the probe saw with no service time (at most the service time:
        the model can take off no more than it adds)."""
        return min(max(0.0, measured_us), self.spec.service_us)
