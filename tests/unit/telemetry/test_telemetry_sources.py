"""Telemetry sources: one lifecycle (start, sample, interpolate, delta) around a window; the QEMU threads are one."""

from __future__ import annotations

import os
import time

import pytest

from protolab.proc import Completed
from protolab.telemetry.source import Source
from protolab.telemetry.telemetry_window import Window
from protolab.vm.telemetry import QemuThreads


class NoNetns:
    def run(self, args, check=True, **kw):
        return Completed(tuple(args), 0, "", "")


class Counter(Source[float]):
    """A source whose counter is a number the test moves."""

    name = "counter"

    def __init__(self):
        self.value = 0.0

    def sample(self):
        return self.value

    def interpolate(self, a, b, f):
        return a + (b - a) * f

    def delta(self, a, b):
        return {"counted": b - a}


def test_a_window_merges_each_sources_delta_and_interpolates_it():
    c = Counter()
    assert isinstance(c, Source) and isinstance(QemuThreads(list), Source)
    w = Window.of(NoNetns())  # type: ignore[arg-type]
    w.add(c)
    a = w.sample()
    c.value = 40.0
    b = w.sample()
    d = w.delta(a, b)
    assert d["counted"] == 40.0 and "machine_busy_s" in d  # the machine's counters and the added source's
    mid = w.interpolate(a, b, (a.t + b.t) / 2)
    assert mid.of("counter") == pytest.approx(20.0)
    plain = Window.of(NoNetns())  # type: ignore[arg-type]
    assert "counted" not in plain.delta(plain.sample(), plain.sample())  # no source, no entry
    with pytest.raises(ValueError, match="'counter' is watched already"):
        w.add(Counter())


def test_two_sources_giving_one_field_are_refused():
    w = Window([Counter(), type("Other", (Counter,), {"name": "other"})()])
    a, b = w.sample(), w.sample()
    with pytest.raises(ValueError, match="two sources give counted"):
        w.delta(a, b)
    with pytest.raises(ValueError, match="two snapshots of different windows"):
        w.delta(a, Window([Counter()]).sample())


def test_qemu_threads_count_the_processes_threads_as_hypervisor_cpu():
    src = QemuThreads(lambda: [os.getpid(), 999_999_999])  # a process that does not exist is skipped
    a = src.sample()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    b = src.sample()
    d = src.delta(a, b)
    # this process has no "CPU n/TCG" thread: all of its time is I/O threads' in QEMU's split
    assert d["hypervisor_cpu_s"]["vcpu"] == 0.0 and d["hypervisor_cpu_s"]["io"] >= 0.2
    assert d["hypervisor_thread"]["cpu_s"] >= 0.2 and d["hypervisor_thread"]["threads"] >= 1
    [half] = src.interpolate(a, b, 0.5)
    assert half.io_s == pytest.approx((sum(t.io_s for t in a) + sum(t.io_s for t in b)) / 2)
    # a client run's boundary keeps the threads: the busiest thread spent half its time by the middle
    assert src.delta(a, [half])["hypervisor_thread"]["cpu_s"] == pytest.approx(d["hypervisor_thread"]["cpu_s"] / 2)


def test_each_window_reads_the_offload_state_of_its_own_cell():
    """One Window serves a whole session; a configuration may set other offloads than the cell before it."""
    states = iter([True, False])

    class Offloads(NoNetns):
        def run(self, args, check=True, **kw):
            if "ethtool" in args:
                on = next(states)
                return Completed(tuple(args), 0, f"tcp-segmentation-offload: {'on' if on else 'off'}\n"
                                 f"generic-segmentation-offload: {'on' if on else 'off'}\n"
                                 f"generic-receive-offload: {'on' if on else 'off'}\n", "")
            return super().run(args, check, **kw)

    w = Window.of(Offloads(), interfaces=[("ns", "eth0")], offload_ports=[("ns", "eth0")])  # type: ignore[arg-type]
    first = w.sample().of("offloads")
    assert w.sample().of("offloads") == first  # within a window: read once
    w.start()  # the next cell, its link set
    assert w.sample().of("offloads") != first


def test_a_server_that_starts_after_the_window_is_watched_from_the_next_sample():
    """The VM testbed's storage server guest boots on first use, after the session's window was made: its QEMU's
    CPU and busiest thread count from then on, as a storage server's."""
    w = Window.of(NoNetns(), server_pids={})  # type: ignore[arg-type]
    before = w.sample()
    assert before.of("servers_cpu") == {}
    w.watch_server("server guest", os.getpid())
    a = w.sample()
    end = time.process_time() + 0.2
    while time.process_time() < end:  # this process busy for 200 ms
        pass
    b = w.sample()
    d = w.delta(a, b)
    # /proc counts whole 10 ms ticks, sampled: half the busy time is a bound no tick rounding crosses
    assert d["servers_cpu_s"]["server guest"] >= 0.1
    assert d["server_threads"]["server guest"]["cpu_s"] >= 0.1
