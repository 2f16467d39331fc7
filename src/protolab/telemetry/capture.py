"""Packet captures and their request→reply times: tcpdump in a namespace on one interface, then tshark's own
dissector matching each protocol's replies to their requests (method.breakdown; the dissector's fields are the
protocol registry's, plan.protocols.Dissector).

tcpdump keeps headers only (``SNAPLEN`` bytes of each frame: Ethernet, IP, TCP and the protocol's header, not the
data) in a kernel buffer of ``BUFFER_KIB``, and writes the capture to its standard output, a file protolab opened
itself (new, never through a symlink): tcpdump, which drops root's rights once its socket is open, never opens a
path. It is stopped with SIGINT, as by hand: it writes what it holds and prints its counters, and a frame the
kernel dropped is a request or a reply tshark cannot match — the point says how many.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolError
from ..plan.protocols import Dissector
from ..proc import Runner

#: Bytes kept of each frame: Ethernet 14 + IP 20 + TCP 32 (timestamps) leave 190 for the protocol's header (iSCSI's
#: BHS is 48, an RPC reply's header and NFS's status under 100, NBD's 28) — and for a second header a segment
#: carries when the I/Os are small; larger frames' data is not needed and not kept.
SNAPLEN = 256
#: tcpdump's kernel buffer (KiB): 2 s of 1GbE's small-I/O frame rate (~90 K frames/s at 4 KiB) at SNAPLEN
BUFFER_KIB = 32768
#: seconds tcpdump and tshark may take to stop or finish before they are killed and the capture is called failed
STOP_TIMEOUT_S = 10.0
TSHARK_TIMEOUT_S = 300.0

_COUNT = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel|dropped by interface)$")


def missing_tools(which=shutil.which) -> str | None:
    """One line naming what method.breakdown needs and this machine lacks (tcpdump, tshark), or None."""
    missing = [t for t in ("tcpdump", "tshark") if which(t) is None]
    if not missing:
        return None
    return (f"method.breakdown needs {' and '.join(missing)}, not found: apt-get install {' '.join(missing)} "
            "(or 'make deps'), or remove breakdown")


@dataclass(frozen=True)
class Counts:
    """tcpdump's own counters as it printed them when it stopped."""

    captured: int = 0
    dropped: int = 0  # by the kernel (its buffer was full) and by the interface


def parse_counts(stderr: str) -> Counts | None:
    """tcpdump's closing lines ('N packets captured', '… dropped by kernel', '… dropped by interface'); None when
    it printed no 'captured' line (it did not stop cleanly)."""
    seen: dict[str, int] = {}
    for line in stderr.splitlines():
        m = _COUNT.match(line.strip())
        if m:
            seen[m.group(2)] = int(m.group(1))
    if "captured" not in seen:
        return None
    return Counts(seen["captured"], seen.get("dropped by kernel", 0) + seen.get("dropped by interface", 0))


@dataclass(frozen=True)
class Times:
    """The replies tshark matched to their requests in one capture: how many, and their mean time (µs)."""

    pairs: int
    mean_us: float | None


def parse_replies(stdout: str) -> list[tuple[float, float]]:
    """tshark's ``-T fields -e frame.time_epoch -e TIME_FIELD`` output: (when the reply was seen, its time from
    the request), seconds, one per matched reply (a frame with several replies lists their times comma-separated:
    each is one pair)."""
    out = []
    for line in stdout.splitlines():
        when, _, times = line.strip().partition("\t")
        out += [(float(when), float(v)) for v in times.split(",") if v.strip()]
    return out


def mean_within(replies: list[tuple[float, float]], lo: float, hi: float) -> Times:
    """The replies seen from ``lo`` to ``hi`` (epoch seconds): how many and their mean time, µs."""
    values = [v for when, v in replies if lo <= when <= hi]
    if not values:
        return Times(0, None)
    return Times(len(values), round(sum(values) / len(values) * 1e6, 3))


def common_span(replies: list[list[tuple[float, float]]]) -> tuple[float, float]:
    """The time every capture ran (each started and stopped a few ms apart from the others): from the latest first
    reply to the earliest last one, so that each point's mean is of the same I/Os, give or take one at each edge."""
    seen = [r for r in replies if r]
    if not seen:
        return 0.0, 0.0
    return max(r[0][0] for r in seen), min(r[-1][0] for r in seen)


def tshark_argv(pcap: Path, dissector: Dissector) -> list[str]:
    """tshark reading ``pcap`` with the protocol's dissector: the replies' time field, one line each."""
    return ["tshark", "-n", "-r", str(pcap), "-Y", dissector.replies, "-T", "fields", "-e", "frame.time_epoch",
            "-e", dissector.time_field]


def tcpdump_argv(ifname: str, port: int) -> list[str]:
    """tcpdump on ``ifname``, headers only, the TCP traffic of the server's ``port``, the capture on stdout."""
    return ["tcpdump", "-i", ifname, "-n", "-s", str(SNAPLEN), "-B", str(BUFFER_KIB), "-w", "-",
            "tcp", "port", str(port)]


def new_file(folder: Path, name: str) -> int:
    """A new file ``name`` in ``folder`` (which the caller checked), opened for writing without following a link
    and refused if anything is there already: its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return os.open(name, flags, 0o600, dir_fd=dirfd)
    finally:
        os.close(dirfd)


@dataclass
class Capture:
    """One tcpdump on one interface of one namespace, writing ``folder/name``."""

    runner: Runner
    netns: str
    ifname: str
    port: int
    folder: Path
    name: str
    proc: subprocess.Popen | None = None
    counts: Counts | None = None
    error: str | None = None

    @property
    def path(self) -> Path:
        return self.folder / self.name

    def start(self) -> None:
        """Start tcpdump (its socket is open and filtering within tens of ms)."""
        fd = new_file(self.folder, self.name)
        try:
            with os.fdopen(fd, "wb", closefd=True) as out:
                self.proc = self.runner.spawn(tcpdump_argv(self.ifname, self.port), netns=self.netns, stdout=out,
                                              stderr=subprocess.PIPE)
        except ToolError as e:
            self.error = str(e)

    def interrupt(self) -> None:
        """SIGINT: tcpdump stops capturing, writes what it holds and prints its counters (``stop`` waits)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def stop(self) -> Counts | None:
        """Interrupt tcpdump and wait for it to write out what it holds and print its counters (killed after
        STOP_TIMEOUT_S: the capture then says it did not stop)."""
        p = self.proc
        if p is None:
            return None
        self.interrupt()
        try:
            _, err = p.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            self.error = f"tcpdump on {self.netns}/{self.ifname} did not stop within {STOP_TIMEOUT_S:g} s"
            return None
        self.counts = parse_counts(err or "")
        if self.counts is None:
            lines = [ln for ln in (err or "").splitlines() if ln.strip()]
            self.error = f"tcpdump on {self.netns}/{self.ifname}: {lines[-1] if lines else f'exit {p.returncode}'}"
        return self.counts

    def replies(self, dissector: Dissector) -> list[tuple[float, float]]:
        """The capture's matched replies (when seen, time from the request), by tshark (ToolError if it fails)."""
        done = self.runner.run(tshark_argv(self.path, dissector), timeout=TSHARK_TIMEOUT_S)
        return parse_replies(done.stdout)
