"""The pool's device model: protolab-blockdev serves the pool image through FUSE with the model applied, and the
loop device (direct I/O) and btrfs sit on top, so the local path and every protocol server go through it.

Why a daemon of our own (src/protolab/lab/blockdev/protolab-blockdev.c): nbdkit's delay filter through nbdfuse
kept ~4 requests in flight (measured), and this kernel has no device-mapper, null_blk, ublk or NBD module. The
daemon raises FUSE's max_background at INIT (the default, 12, would cap the model's parallelism), answers every
request from a timer thread at the time the model gives it, and learns how late its timer wakes.

The rest of the stack's own time per request (FUSE, loop, the kernel's wake-ups on this machine) is measured at 1
outstanding I/O with direct reads of a file on the pool (btrfs, the loop device, FUSE: as every path meets them; the
mean without the slowest 1 %), with the daemon calibrating (told so through an extended attribute of its file):
every request is held as long as the model will hold it (its service time, at most CALIBRATE_MAX_US, less the
overhead found so far), then its transfer, with no spread, cache or queueing, so that its answers wait on the same
timer as the model's. What a read took beyond that is the overhead, handed to the daemon, which counts each request
as issued that much earlier: the host then sees the model's service time, and parallelism / service time at
saturation. Nothing else is changed by it. The pool measures it when it is made and again when it is snapshotted:
the machine is then past the lab's start, whose first seconds read up to 16 µs more per request than fio saw seconds
later (measured 2026-11-28, flash, in 3 of 6 labs). With a write-back cache, writes are calibrated the same way at
its acknowledgement time, and get their own overhead: hdd-array's reads held 5.5 ms found 189 µs, and writes
acknowledged 0.5 ms after arrival less that came 18 % early (CI, 2026-11-28).

Why not measure with the daemon answering at once: its timer thread is then woken by every request, a hand-off that
a request waiting for its service time never pays. That probe read 83–96 µs where fio's requests then cost ~60 µs,
and fio's reads came 15–25 % under the model (measured 2026-11-28, flash, 1 OIO).
"""

from __future__ import annotations

import array
import fcntl
import mmap
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from ..errors import ToolError
from ..plan.storage import StorageSpec
from ..proc import Runner
from ..telemetry.devicetime import DeviceCounters
from ..trust import check_library, check_program, open_nofollow, project_deps
from .procs import Processes, wait_until
from .record import Resource

BINARY = "protolab-blockdev"
TIMEOUT = 20.0
PROBE_SECONDS = 1.0
CALIBRATE_ROUNDS = (1.0, 3.0)  # seconds of each round: the first finds how long the model will hold a read
PROBE_BLOCK = 4096
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_NOCOW_FL = 0x80086601, 0x40086602, 0x00800000  # linux/fs.h
CALIBRATE_MAX_US = 20_000.0  # a longer service time calibrates at this one: ~50 reads in a round of a second


#: Where Debian's libeatmydata1 puts the library (root's, checked before use).
EATMYDATA = Path("/usr/lib/x86_64-linux-gnu/libeatmydata.so.1")
#: NFS-Ganesha's direct-I/O shim (src/protolab/lab/blockdev/protolab-direct.c), built beside the daemon.
DIRECT_LIB = "protolab-direct.so"


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


def describe(spec: StorageSpec, caches: dict[str, str], overhead_us: float | None,
             write_overhead_us: float | None = None) -> dict:
    """The device model as the run's testbed description keeps it (the report's Environment reads it); ``caches``:
    the cache each path had above the model, by protocol (lab.servers.path_caches)."""
    out: dict = {"model": spec.name, "figures": spec.summary(), "source": spec.source}
    if not spec.is_ram:
        out["caches"] = caches
        out["overhead_us"] = overhead_us
        if spec.write_us:
            out["write_overhead_us"] = write_overhead_us
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


def model_text(spec: StorageSpec) -> str:
    """user.protolab.model's value for ``spec``: 'service=150000 spread=0 parallelism=8 rate=0 write=0' (ns,
    bytes/s); the cache's size is the daemon's from its start (its table is allocated once)."""
    return (f"service={spec.service_us * 1000:.0f} spread={spec.spread_us * 1000:.0f} parallelism={spec.servers} "
            f"rate={spec.throughput_bps or 0:.0f} write={spec.write_us * 1000:.0f}")


def set_control(served: Path, name: str, value: str) -> None:
    """Set the daemon's control ``user.protolab.NAME`` on its file ``served`` (OSError as the daemon answers)."""
    os.setxattr(served, f"user.protolab.{name}", value.encode(), follow_symlinks=False)


def get_control(served: Path, name: str) -> str:
    """The daemon's value of ``user.protolab.NAME`` (model, stall, corrupt, stats) on its file ``served``."""
    return os.getxattr(served, f"user.protolab.{name}", follow_symlinks=False).decode()


STATS_KEYS = ("reads", "writes", "queue_ns", "service_ns")


def stats_of(text: str) -> DeviceCounters:
    """The counters of user.protolab.stats ('reads=N writes=N queue_ns=N service_ns=N': each key once, in that
    order, whole numbers); ToolError for anything else (a daemon out of step with this protolab)."""
    pairs = [w.partition("=") for w in text.split()]
    if [k for k, _, _ in pairs] != list(STATS_KEYS) or not all(v.isascii() and v.isdigit() for _, _, v in pairs):
        raise ToolError(f"lab.storage: {BINARY} gave user.protolab.stats = {text!r}, not "
                        f"'{' '.join(k + '=N' for k in STATS_KEYS)}'; run 'make deps' to rebuild it")
    return DeviceCounters(*(float(v) for _, _, v in pairs))


@dataclass(frozen=True)
class Overhead:
    """The stack's own time per request, in µs, as handed to the daemon: reads (and writes served like them), and
    writes acknowledged from a write-back cache (None: the model has none)."""

    read_us: float = 0.0
    write_us: float | None = None


@dataclass
class BlockDevice:
    """The FUSE daemon of one lab: started, calibrated (the stack's overhead measured and handed to it) whenever
    the pool asks; recorded for teardown."""

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

    def start(self) -> Resource:
        """Mount the model (recorded first: the FUSE mount, then the daemon's process), answering every request at
        once until ``calibrate``."""
        binary, _ = find_blockdev()
        if binary is None:
            raise ToolError(f"lab.storage: {BINARY} is not built; run 'make deps' (it needs libfuse3-dev), or use "
                            "model = 'ram'")
        if not self.procs.record.find("mount", str(self.mountpoint)):
            self.procs.record.add("mount", str(self.mountpoint))
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        res = self.procs.start(BINARY, daemon_argv(binary, self.mountpoint, self.image, self.disk, self.spec, 0.0),
                               None, cgroup=False)
        wait_until(BINARY, self.served.exists, TIMEOUT, lambda: self.procs.running(res),
                   lambda: self.procs.log_tail(BINARY))
        self._control("calibrate", "0")  # making the file system: no service time at all
        return res

    def _control(self, name: str, value: str) -> None:
        """Tell the daemon (an extended attribute of its file: user.protolab.calibrate, .overhead, .write_overhead,
        .model, .stall or .corrupt)."""
        try:
            set_control(self.served, name, value)
        except OSError as e:
            raise ToolError(f"lab.storage: {BINARY} refused {name} = {value}: {e.strerror}; "
                            f"see {BINARY}.log in the lab's logs") from None

    def set_model(self, spec: StorageSpec) -> None:
        """Serve ``spec`` from now on (a swept service time): its figures through user.protolab.model, every server
        free again; the caller quiesces the pool first and calibrates after."""
        self._control("model", model_text(spec))
        self.spec = spec

    def model_in_effect(self) -> str:
        """The daemon's own account of the model it serves (user.protolab.model read back)."""
        return get_control(self.served, "model")

    def stall(self, seconds: float) -> None:
        """Answer no request before ``seconds`` from now (a later stall extends an earlier one; 0 ends it)."""
        self._control("stall", f"{seconds * 1e9:.0f}")

    def stall_left(self) -> float:
        """Seconds of the stall still to come (0: none)."""
        return int(get_control(self.served, "stall")) / 1e9

    def corrupt(self, offset: int, length: int) -> None:
        """Flip every byte of [offset, offset + length) of the disk in the reads that cover it (the pool's image
        keeps its bytes); length 0: no longer."""
        self._control("corrupt", f"{offset} {length}" if length else "")

    def stats(self) -> DeviceCounters:
        """The daemon's counters since it started (user.protolab.stats): requests answered, their queue and service
        time (OSError when it does not answer)."""
        return stats_of(get_control(self.served, "stats"))

    def corruption(self) -> tuple[int, int] | None:
        """The corrupted range (offset, length) in force, or None."""
        words = get_control(self.served, "corrupt").split()
        return (int(words[0]), int(words[1])) if words else None

    def calibrate(self, probe: Path, nocow: bool, guess: Overhead | None = None) -> Overhead:
        """Measure the stack's overhead with the PROBE_SPAN file ``probe`` (written, read, removed) while the
        daemon calibrates, and hand it to the daemon, which then serves the model again.

        The stack's time depends on how long the daemon holds a request (the shorter, the less the machine idles
        between requests: measured 2026-11-28, flash, ~6 µs less at 106 µs than at 166 µs; hdd-array's 5.5 ms
        read 189 µs where its 0.5 ms writes then came 90 µs early), so each round holds a request as the model
        will with the overhead found so far (``guess`` at first): reads for the service time and, with a
        write-back cache, writes for its acknowledgement time, each with its own overhead."""
        guess = guess or Overhead()
        self._control("calibrate", f"{hold_us(self.spec.service_us, guess.read_us) * 1000:.0f}")
        try:
            probe.unlink(missing_ok=True)  # left by a calibration that was cut short
            self.write_probe(probe, nocow)
            try:
                read = self._rounds(str(probe), self.spec.service_us, guess.read_us, write=False)
                write = (self._rounds(str(probe), self.spec.write_us, guess.write_us or 0.0, write=True)
                         if self.spec.write_us else None)
            finally:
                probe.unlink(missing_ok=True)
            self.hand_overhead(Overhead(read, write))
        finally:
            self._control("calibrate", "off")
        return Overhead(read, write)

    def hand_overhead(self, overhead: Overhead) -> None:
        """Give the daemon the stack's overhead (reads, and writes acknowledged from a write-back cache)."""
        self._control("overhead", f"{overhead.read_us * 1000:.0f}")
        if overhead.write_us is not None:
            self._control("write_overhead", f"{overhead.write_us * 1000:.0f}")

    def _rounds(self, probe: str, service_us: float, overhead: float, write: bool) -> float:
        """CALIBRATE_ROUNDS of requests held ``service_us`` less the overhead found so far: the overhead in µs."""
        for seconds in CALIBRATE_ROUNDS:
            hold = hold_us(service_us, overhead)
            self._control("calibrate", f"{hold * 1000:.0f}")
            overhead = overhead_us(self.probe_us(probe, self.PROBE_SPAN, seconds, write), hold, service_us,
                                   self.spec.throughput_bps)
        return overhead

    def stop(self, res: Resource) -> None:
        """Stop the daemon (it unmounts its FUSE mount on SIGTERM)."""
        self.procs.stop(res)

    PROBE_SPAN = 16 * 2**20  # the probe file: written once, then read at random

    def write_probe(self, path: Path, nocow: bool) -> None:
        """A PROBE_SPAN file written with direct I/O (btrfs answers reads of never-written blocks without the
        device, so every block is written), created anew where nothing may be; ``nocow``: No_COW like the exports'
        data files on a pool without cow, which therefore have no checksums to look up and verify on a read (a
        probe with them read ~5 µs more per request than the exports, measured 2026-11-28)."""
        fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
        buf = mmap.mmap(-1, 2**20)
        buf.write(os.urandom(2**20))
        try:
            if nocow:  # chattr +C on the empty file, through its descriptor
                flags = array.array("i", [0])
                fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags, True)
                flags[0] |= FS_NOCOW_FL
                fcntl.ioctl(fd, FS_IOC_SETFLAGS, flags)
            for off in range(0, self.PROBE_SPAN, 2**20):
                os.pwritev(fd, [buf], off)
            os.fsync(fd)
        finally:
            os.close(fd)
            buf.close()

    def probe_us(self, path: str, span: int, seconds: float = PROBE_SECONDS, write: bool = False) -> float:
        """Mean time of one 4 KiB direct read (``write``: write) at 1 outstanding I/O of ``path`` (within ``span``
        bytes), over ~``seconds``, without its slowest 1 %: a mean, as the model's service time is (a median read
        ~4 µs under fio's mean of the same reads, measured 2026-11-28), without the stalls of a busy moment of the
        machine, which would otherwise be taken off every request afterwards."""
        fd = os.open(path, (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT | os.O_NOFOLLOW)
        buf = mmap.mmap(-1, PROBE_BLOCK)
        buf.write(os.urandom(PROBE_BLOCK))
        io = os.pwritev if write else os.preadv
        rng = random.Random(0)
        blocks = max(1, span // PROBE_BLOCK)
        times: list[float] = []
        try:
            end = time.monotonic() + seconds
            while (time.monotonic() < end or len(times) < 20) and len(times) < 100_000:
                off = rng.randrange(blocks) * PROBE_BLOCK
                t0 = time.perf_counter()
                io(fd, [buf], off)
                times.append(time.perf_counter() - t0)
        finally:
            os.close(fd)
            buf.close()
        kept = sorted(times[5:] or times)  # the first few warm the path up
        return 1e6 * fmean(kept[:max(1, len(kept) * 99 // 100)])


def hold_us(service_us: float, overhead_us: float) -> float:
    """How long the model holds a request at 1 outstanding I/O before its transfer, given its ``service_us`` (at
    most CALIBRATE_MAX_US) and ``overhead_us``."""
    return max(0.0, min(service_us, CALIBRATE_MAX_US) - overhead_us)


def overhead_us(measured_us: float, hold_us: float, service_us: float, rate_bps: float | None) -> float:
    """The stack's own time per request: what a calibrating request took beyond the daemon's hold and the transfer
    (at most ``service_us``: the model can take off no more than it adds)."""
    transfer = 1e6 * PROBE_BLOCK / rate_bps if rate_bps else 0.0
    return min(max(0.0, measured_us - hold_us - transfer), service_us)
