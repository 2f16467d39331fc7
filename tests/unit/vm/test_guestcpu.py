"""The storage server guest's own CPU over its stat port (vm.guestcpu): the line's parse, the FIFO channel against
a responder standing in for the guest's init, the telemetry source, QEMU's arguments and the derived figure.
(The channel against a real guest: tests/lab/test_kernel_nvme.py.)"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from protolab.analysis.derived import Figures, derive
from protolab.metrics import METRICS
from protolab.vm.guestcpu import KERNEL_ARG, GuestCpu, GuestStat, StatChannel, parse_cpu_line
from protolab.vm.qemu import GuestSpec

LINE = "cpu  1000 20 300 5000 80 10 40 25 0 0"


def test_the_cpu_line_gives_busy_and_total_seconds_at_user_hz():
    s = parse_cpu_line(LINE)
    # busy: user nice system irq softirq = 1000+20+300+10+40 ticks; total adds idle 5000, iowait 80 and steal 25
    # (time the hypervisor kept from the vCPU: not the guest's work)
    assert s == GuestStat(13.70, 64.75)
    assert parse_cpu_line("cpu  1 2 3 4 5 6 7") is None  # too short: no steal column
    assert parse_cpu_line("cpu  " + "9" * 4000 + " 1 1 1 1 1 1 1") is None  # no tick count: not an OverflowError
    assert parse_cpu_line("cpu0 1 2 3 4 5 6 7 8") is None  # a core's line, not the machine's
    assert parse_cpu_line("cpu  1 2 x 4 5 6 7 8") is None
    assert parse_cpu_line("cpu  1 2 -3 4 5 6 7 8") is None
    assert parse_cpu_line("") is None
    assert parse_cpu_line("intr 1 2 3 4 5") is None


class Responder:
    """The guest's init as a thread: each newline read from ``.in`` is answered on ``.out`` (``answer``)."""

    def __init__(self, ch: StatChannel, answer: str | None):
        self.ch, self.answer, self.asked = ch, answer, 0
        self.fd_in = os.open(ch.to_guest, os.O_RDWR)
        self.fd_out = os.open(ch.from_guest, os.O_RDWR)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while True:
            got = os.read(self.fd_in, 64)
            if b"quit" in got:
                return
            self.asked += got.count(b"\n")
            if self.answer is not None:
                os.write(self.fd_out, self.answer.encode() + b"\n")

    def stop(self) -> None:
        os.write(self.fd_in, b"quit\n")
        self.thread.join(5)
        os.close(self.fd_in)
        os.close(self.fd_out)


@pytest.fixture
def channel(tmp_path: Path):
    ch = StatChannel(tmp_path / "g.stat")
    ch.make()
    yield ch
    ch.remove()


def test_the_channel_asks_and_reads_one_answer(channel):
    assert oct(channel.to_guest.stat().st_mode & 0o777) == "0o600"
    r = Responder(channel, LINE)
    try:
        assert channel.ask() == GuestStat(13.70, 64.75)
        assert channel.ask() == GuestStat(13.70, 64.75)
    finally:
        r.stop()
    assert r.asked == 2


def test_a_stale_answer_is_drained_and_a_silent_or_nonsense_guest_gives_none(channel):
    # an answer left from an earlier question (one that timed out) is not taken for this one
    fd = os.open(channel.from_guest, os.O_RDWR)
    os.write(fd, b"cpu  1 1 1 1 1 1 1 1\n")
    r = Responder(channel, LINE)
    try:
        assert channel.ask() == GuestStat(13.70, 64.75)
    finally:
        r.stop()
        os.close(fd)
    silent = Responder(channel, None)
    try:
        assert channel.ask(timeout=0.2) is None
    finally:
        silent.stop()
    nonsense = Responder(channel, "rm -rf /")
    try:
        assert channel.ask(timeout=0.5) is None
    finally:
        nonsense.stop()


def test_no_fifos_no_figure_and_a_symlink_is_never_followed(tmp_path, channel):
    assert StatChannel(tmp_path / "none").ask(timeout=0.1) is None
    r = Responder(channel, LINE)  # a live channel the links point at: followed, they would give its figures
    try:
        for end in ("in", "out"):
            (tmp_path / f"link.{end}").symlink_to(channel.base.with_name(f"{channel.base.name}.{end}"))
        assert StatChannel(tmp_path / "link").ask(timeout=0.3) is None
        assert channel.ask() == GuestStat(13.70, 64.75)
    finally:
        r.stop()


def test_the_source_gives_the_busy_seconds_between_samples():
    src = GuestCpu(lambda: None)
    assert src.sample() is None  # no server guest (yet)
    a, b = GuestStat(10.0, 50.0), GuestStat(13.5, 60.0)
    assert src.delta(a, b) == {"server_guest_cpu_s": pytest.approx(3.5)}
    assert src.interpolate(a, b, 0.5) == GuestStat(11.75, 55.0)
    assert src.delta(None, b) == {} and src.interpolate(a, None, 0.5) is None
    assert src.delta(b, a) == {}  # the guest rebooted between them: no figure, not a negative one


def test_qemu_gets_the_pipe_as_the_second_serial_port_and_the_guest_its_word(tmp_path):
    ch = StatChannel(tmp_path / "g.stat")
    argv = GuestSpec("g", Path("/k"), Path("/i"), stat=ch).argv(tmp_path / "pid", tmp_path / "console")
    serials = [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"]
    assert serials == [f"file:{tmp_path / 'console'}", "chardev:plstat"]  # ttyS0 the console, ttyS1 the port
    assert argv[argv.index("-chardev") + 1] == f"pipe,id=plstat,path={tmp_path / 'g.stat'}"
    assert KERNEL_ARG in argv[argv.index("-append") + 1].split()
    plain = GuestSpec("g", Path("/k"), Path("/i")).argv(tmp_path / "pid", tmp_path / "console")
    assert "-chardev" not in plain and KERNEL_ARG not in " ".join(plain)


def test_the_figure_per_io_and_its_metric():
    f = Figures(**derive(100_000, 2.0, {"elapsed_s": 10.0, "server_guest_cpu_s": 3.0}))
    assert f.server_guest_cpu_s == 3.0 and f.cpu_us_per_io_server_guest == pytest.approx(30.0)
    assert Figures(**derive(100_000, 2.0, {"elapsed_s": 10.0})).cpu_us_per_io_server_guest is None
    m = METRICS["cpu_us_per_io_server_guest"]
    assert (m.compared, m.testbeds, m.source) == (False, ("vm",), "figures")


def test_a_kernel_command_line_linux_would_cut_short_is_refused(tmp_path):
    from protolab.errors import ProtolabError

    words = tuple(f"pl.x{i}=" + "a" * 40 for i in range(60))
    with pytest.raises(ProtolabError, match=r"guest g: its kernel command line would be \d+ bytes, more than the 2047"):
        GuestSpec("g", Path("/k"), Path("/i"), append=words).argv(tmp_path / "pid", tmp_path / "console")
    GuestSpec("g", Path("/k"), Path("/i"), append=words[:40]).argv(tmp_path / "pid", tmp_path / "console")


def test_a_guest_that_floods_its_port_cannot_hold_a_sample(channel):
    fd = os.open(channel.from_guest, os.O_RDWR | os.O_NONBLOCK)
    try:
        try:
            while True:
                os.write(fd, b"x" * 4096)  # the FIFO full (64 KiB): a guest writing without end
        except BlockingIOError:
            pass
        assert channel.ask(timeout=0.2) is None  # what follows the drained 64 KiB is no cpu line
    finally:
        os.close(fd)


class Init(Responder):
    """The guest's init with the knfsd verbs: a verb gets ``verbs[verb]`` (after a late cpu line, in one write, as a
    busy guest may send both at once); anything else the cpu line."""

    def __init__(self, ch: StatChannel, verbs: dict[str, str]):
        self.verbs = verbs
        super().__init__(ch, LINE)

    def run(self) -> None:
        while True:
            got = os.read(self.fd_in, 64)
            if b"quit" in got:
                return
            for line in got.decode().splitlines():
                self.asked += 1
                answer = self.verbs.get(line)
                os.write(self.fd_out, (f"{LINE}\n{answer}\n" if answer is not None else f"{LINE}\n").encode())


def test_the_host_tells_the_guest_to_quiesce_and_resume_and_reads_its_answer_only(channel):
    r = Init(channel, {"quiesce": "ok quiesce", "resume": "failed resume: mount or exportfs"})
    try:
        assert channel.tell("quiesce", timeout=2) == "ok quiesce"  # the cpu line before it is not the answer
        assert channel.tell("resume", timeout=2) == "failed resume: mount or exportfs"
        assert channel.ask() == GuestStat(13.70, 64.75)  # and the port still answers samples
        with pytest.raises(ValueError, match="'reboot' is not one of quiesce, resume"):
            channel.tell("reboot", timeout=1)
    finally:
        r.stop()
    assert r.asked == 3  # the refused verb never reached the guest
    silent = Responder(channel, None)
    try:
        assert channel.tell("quiesce", timeout=0.3) == ""
    finally:
        silent.stop()


def test_a_restore_the_server_guest_does_not_let_go_of_is_one_line(channel):
    from protolab.errors import ToolError
    from protolab.run.vmbed import VmTestbed

    bed = VmTestbed.__new__(VmTestbed)
    bed.server = type("G", (), {"spec": GuestSpec("s", Path("k"), Path("i"), stat=channel)})()
    r = Init(channel, {"quiesce": "failed quiesce: /export stays busy"})
    try:
        with pytest.raises(ToolError, match=r"^the storage server guest's knfsd did not quiesce its volume for the "
                                            r"restore: failed quiesce: /export stays busy$"):
            bed._tell_server("quiesce")
    finally:
        r.stop()
