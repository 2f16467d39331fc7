"""The pool's device model: protolab-blockdev serves the pool image through FUSE with the model applied, and the
loop device (direct I/O) and btrfs sit on top, so the local path and every protocol server go through it.

Why a daemon of our own (src/protolab/lab/blockdev/protolab-blockdev.c): nbdkit's delay filter through nbdfuse
kept ~4 requests in flight (measured), and this kernel has no device-mapper, null_blk, ublk or NBD module. The
daemon raises FUSE's max_background at INIT (the default, 12, would cap the model's parallelism), answers every
request from a timer thread at the time the model gives it, and learns how late its timer wakes.

At start-up the rest of the stack's own time per request (FUSE, loop, the kernel's wake-ups on this machine) is
measured at 1 outstanding I/O through the loop device, with the daemon answering at once, and handed to the
daemon, which counts each request as issued that much earlier: the host then sees the model's service time, and
parallelism / service time at saturation. Nothing else is changed by it.
"""

from __future__ import annotations

import mmap
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolError
from ..plan.storage import StorageSpec
from ..proc import Runner
from ..trust import check_program, project_deps
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
    "ganesha": "the host's page cache: NFS-Ganesha's VFS FSAL has no direct-I/O option, so reads of data already "
               "in RAM do not reach the device model",
}


def path_caches(servers: dict[str, str | None]) -> dict[str, str]:
    """The cache each path had above the device model, by protocol (``servers``: protocol → its server)."""
    return {p: SERVER_CACHE.get(server, "unknown: this server's cache is not described") for p, server in
            servers.items()}


def describe(spec: StorageSpec, servers: dict[str, str | None], overhead_us: float | None) -> dict:
    """The device model as the run's testbed description keeps it (the report's Environment reads it)."""
    out: dict = {"model": spec.name, "figures": spec.summary(), "source": spec.source}
    if not spec.is_ram:
        out["caches"] = path_caches(servers)
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

    def probe_us(self, loop_device: str, span: int) -> float:
        """Mean time of one 4 KiB direct read at 1 outstanding I/O through ``loop_device`` (within ``span``
        bytes), over ~PROBE_SECONDS."""
        fd = os.open(loop_device, os.O_RDONLY | os.O_DIRECT)
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
        return 1e6 * sum(times[5:]) / max(1, len(times) - 5)  # the first few warm the path up

    def overhead_us(self, measured_us: float) -> float:
        """The stack's own time per request: what the probe saw with no service time (at most the service time:
        the model can take off no more than it adds)."""
        return min(max(0.0, measured_us), self.spec.service_us)
