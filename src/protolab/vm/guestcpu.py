"""A guest's own CPU, from its /proc/stat, over a second serial port: the storage server guest's CPU as its kernel
counts it (the kernel data paths' targets run there), beside its QEMU threads' CPU on this host.

The channel is QEMU's ``pipe`` character device on the guest's second serial port (ttyS1; the 8250 driver is
built into Debian's kernel, so no module is needed): two FIFOs in the guest's directory, ``NAME.stat.in`` (to the
guest) and ``NAME.stat.out`` (from it). The guest's init answers each newline it reads with /proc/stat's first
line ('cpu  user nice system idle iowait irq softirq steal …', in USER_HZ ticks). Nothing the guest sends is run
or trusted beyond being parsed as numbers: a line that is not one gives no figure.

The same port carries the two words of a restore (``tell``): ``quiesce`` has the server guest's knfsd let go of
the pool's knfsd volume (unexported, unmounted) and ``resume`` take it back; the guest answers 'ok VERB' or
'failed VERB: why', and the answer is only compared with those words. One exchange holds the port at a time.

Under TCG the guest's ticks are emulated time: the figure shows where the guest's kernel spent its time, not
what that costs on a real CPU (the report says so for TCG runs).
"""

from __future__ import annotations

import os
import select
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..telemetry.cpu import cpu_line_ticks
from ..telemetry.source import Fields, lerp

#: the kernel's clock ticks per second as /proc/stat counts them (USER_HZ: 100 on every Linux architecture
#: protolab boots, whatever the kernel's own HZ)
USER_HZ = 100
#: how long a sample waits for the guest's answer (a busy TCG guest answers in 10-20 ms): a sample stalls no longer
ANSWER_TIMEOUT_S = 0.5
#: the kernel command line word that makes the guest's init answer on ttyS1
KERNEL_ARG = "pl.stat=ttyS1"
#: what the host may tell the guest's init on the port besides asking for its CPU (scripts/build-guest.sh): unexport
#: and unmount the pool's knfsd volume, and mount and export it again (the host restores the pool in between)
VERBS = ("quiesce", "resume")
#: one exchange on a port at a time: a sample never reads the answer to a verb, nor a verb a cpu line
_PORT = threading.Lock()


class GuestStat(NamedTuple):
    """CPU seconds of the whole guest since its boot: busy (everything but idle and iowait) and in all."""

    busy_s: float
    total_s: float


def parse_cpu_line(line: str) -> GuestStat | None:
    """/proc/stat's 'cpu' line as busy and total seconds; None for anything else.

    Busy is user, nice, system, irq and softirq (guest time is inside user already); idle, iowait and steal — time
    the hypervisor did not give the vCPU — are not the guest's work, though they are part of its total."""
    ticks = cpu_line_ticks(line)
    if ticks is None:
        return None
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
    return GuestStat(busy / USER_HZ, sum(ticks) / USER_HZ)


@dataclass(frozen=True)
class StatChannel:
    """The two FIFOs of a guest's stat port (``base``.in, ``base``.out), made before its QEMU starts."""

    base: Path

    @property
    def to_guest(self) -> Path:
        return self.base.with_name(self.base.name + ".in")

    @property
    def from_guest(self) -> Path:
        return self.base.with_name(self.base.name + ".out")

    def qemu_args(self, chardev: str = "plstat") -> list[str]:
        """QEMU's arguments for the port: the pipe character device as the second serial port."""
        return ["-chardev", f"pipe,id={chardev},path={self.base}", "-serial", f"chardev:{chardev}"]

    def make(self) -> None:
        """Create both FIFOs (root's alone), replacing any left by an earlier boot."""
        for p in (self.to_guest, self.from_guest):
            p.unlink(missing_ok=True)
            os.mkfifo(p, 0o600)

    def remove(self) -> None:
        for p in (self.to_guest, self.from_guest):
            p.unlink(missing_ok=True)

    def ask(self, timeout: float = ANSWER_TIMEOUT_S) -> GuestStat | None:
        """The guest's CPU now; None when it does not answer in time (or answers nonsense)."""
        if not _PORT.acquire(timeout=timeout):  # the port is busy with a verb: no figure
            return None
        try:
            return parse_cpu_line(self._exchange(b"\n", timeout, lambda line: True))
        finally:
            _PORT.release()

    def tell(self, verb: str, timeout: float) -> str:
        """Have the guest's init do ``verb`` (one of VERBS); its answer, 'ok VERB' or 'failed VERB: why', or ''
        when none came within ``timeout``. Nothing the guest sends is run: it is compared with those words."""
        if verb not in VERBS:
            raise ValueError(f"guest port: {verb!r} is not one of {', '.join(VERBS)}")
        with _PORT:
            return self._exchange(f"{verb}\n".encode(), timeout,
                                  lambda line: line.startswith((f"ok {verb}", f"failed {verb}")))

    def _exchange(self, question: bytes, timeout: float, answers: Callable[[str], bool]) -> str:
        """Write ``question`` and return the first line the guest sends back that ``answers`` (else '')."""
        flags = os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW  # O_RDWR: a FIFO opens without waiting for the other end
        try:
            fd_out = os.open(self.from_guest, flags)
        except OSError:
            return ""
        try:
            _drain(fd_out)  # a late answer to an earlier question is not this one's
            fd_in = os.open(self.to_guest, flags)
            try:
                os.write(fd_in, question)
            finally:
                os.close(fd_in)
            return _answer(fd_out, timeout, answers)
        except OSError:
            return ""
        finally:
            os.close(fd_out)


def _drain(fd: int, most: int = 64 * 1024) -> None:
    """Read what is waiting on ``fd`` (at most ``most`` bytes: a guest that keeps writing cannot hold a sample)."""
    while most > 0 and select.select([fd], [], [], 0)[0]:
        got = os.read(fd, 4096)
        if not got:
            return
        most -= len(got)


def _answer(fd: int, timeout: float, answers: Callable[[str], bool]) -> str:
    """The first line from ``fd`` within ``timeout`` that ``answers`` ('' if none came); lines are read whole,
    each at most 4 KiB, and at most 64 KiB in all."""
    got = b""
    read = 0
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in got:
            line, got = got.split(b"\n", 1)
            text = line.decode("ascii", errors="replace")
            if answers(text):
                return text
        left = deadline - time.monotonic()
        if left <= 0 or len(got) >= 4096 or read >= 64 * 1024 or not select.select([fd], [], [], left)[0]:
            return ""
        chunk = os.read(fd, 4096)
        if not chunk:
            return ""
        got += chunk
        read += len(chunk)


class GuestCpu:
    """The storage server guest's own CPU around a window (a telemetry source): ``server_guest_cpu_s``, busy
    seconds by its /proc/stat. No figure when the guest is not up or does not answer at either end."""

    name = "server_guest"
    instant = False  # a question to a guest: read after the instant

    def __init__(self, channel: Callable[[], StatChannel | None]):
        self.channel = channel

    def start(self) -> None:
        pass

    def sample(self) -> GuestStat | None:
        ch = self.channel()
        return ch.ask() if ch is not None else None

    def interpolate(self, a: Any, b: Any, f: float) -> GuestStat | None:
        if a is None or b is None:
            return None
        return GuestStat(lerp(a.busy_s, b.busy_s, f), lerp(a.total_s, b.total_s, f))

    def delta(self, before: Any, after: Any) -> Fields:
        if before is None or after is None or after.total_s < before.total_s:  # not answered, or a reboot between
            return {}
        return {"server_guest_cpu_s": max(0.0, after.busy_s - before.busy_s)}
