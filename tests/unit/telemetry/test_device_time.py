"""The device model's time per request (issue 46): user.protolab.stats parsed, two readings' difference (also
interpolated at a client run's boundary), the window's source giving no Telemetry field, the record's DeviceTime and
its cells.csv columns — from counters the test sets, and through the session with a fake testbed."""

from __future__ import annotations

import csv

import pytest
from test_telemetry_sources import NoNetns

from fakes import PLAN, FakeFio, FakeTestbed
from protolab.errors import ToolError
from protolab.lab.device import stats_of
from protolab.plan.load import load_plan_text
from protolab.results.records import DeviceTime
from protolab.run import Study
from protolab.run.recording import device_time
from protolab.telemetry.devicetime import DeviceCounters, DeviceStats, between
from protolab.telemetry.source import Source
from protolab.telemetry.telemetry_window import Window


def test_the_daemons_stats_are_read_in_its_one_form():
    assert stats_of("reads=12 writes=3 queue_ns=4500 service_ns=7500000") == DeviceCounters(12, 3, 4500, 7500000)
    assert stats_of("reads=0 writes=0 queue_ns=0 service_ns=0").requests == 0
    big = 2**63  # the daemon's counters are 64-bit
    assert stats_of(f"reads={big} writes=0 queue_ns=0 service_ns=0").reads == float(big)


@pytest.mark.parametrize("text", ["", "reads=1 writes=2 queue_ns=3", "writes=2 reads=1 queue_ns=3 service_ns=4",
                                  "reads=1 writes=2 queue_ns=3 service_ns=4 hits=5", "reads=-1 writes=2 queue_ns=3 "
                                  "service_ns=4", "reads=1.5 writes=2 queue_ns=3 service_ns=4",
                                  "reads=1 writes= queue_ns=3 service_ns=4", "reads=١ writes=2 queue_ns=3 service_ns=4",
                                  "service=150000 spread=0 parallelism=8 rate=0 write=0"])
def test_anything_else_is_refused_naming_the_attribute(text):
    with pytest.raises(ToolError, match="user.protolab.stats"):
        stats_of(text)


def test_a_windows_counters_are_the_difference_of_two_readings():
    before = DeviceCounters(reads=100, writes=10, queue_ns=1_000_000, service_ns=60_000_000)
    after = DeviceCounters(reads=1100, writes=10, queue_ns=301_000_000, service_ns=560_000_000)
    d = between(before, after)
    assert d == DeviceCounters(1000, 0, 300_000_000, 500_000_000)
    assert (d.mean_queue_us(), d.mean_service_us()) == (300.0, 500.0)  # per request, µs
    assert between(None, after) is None and between(before, None) is None  # a reading failed
    assert between(after, before) is None  # the counters went back: another daemon
    assert DeviceCounters().mean_queue_us() == 0 and DeviceCounters().mean_service_us() == 0  # no request


def test_the_record_gets_means_per_request_and_whole_counts():
    # a client run's boundaries are interpolated: the counts are made whole again, the means are the sums' quotient
    dt = device_time(DeviceCounters(reads=999.6, writes=200.4, queue_ns=1_200_000.0, service_ns=600_000_000.0))
    assert dt == DeviceTime(requests=1200, reads=1000, writes=200, queue_us=1.0, service_us=500.0)
    assert device_time(None) is None
    assert device_time(DeviceCounters()) == DeviceTime(requests=0, queue_us=0.0, service_us=0.0)


class Daemon:
    """The daemon's counters as the test moves them (or a daemon that does not answer)."""

    def __init__(self):
        self.now: DeviceCounters | None = DeviceCounters()

    def read(self) -> DeviceCounters:
        if self.now is None:
            raise OSError(61, "No data available")
        return self.now


def test_the_window_samples_the_device_with_its_counters_and_gives_its_difference_not_a_telemetry_field():
    daemon = Daemon()
    w = Window.of(NoNetns(), device=daemon.read)  # type: ignore[arg-type]
    src = next(s for s in w.sources if isinstance(s, DeviceStats))
    assert isinstance(src, Source) and src.instant  # read in the sample's instant, with the window's counters
    daemon.now = DeviceCounters(10, 0, 0, 1_000_000)
    a = w.sample()
    daemon.now = DeviceCounters(410, 100, 400_000_000, 201_000_000)
    b = w.sample()
    assert w.device(a, b) == DeviceCounters(400, 100, 400_000_000, 200_000_000)
    mid = w.interpolate(a, b, (a.t + b.t) / 2)  # a client run's boundary between two samples
    half = w.device(a, mid)  # half-way on each counter's line (the instant's arithmetic is a float's)
    assert half is not None and vars(half) == pytest.approx(vars(DeviceCounters(200, 50, 200_000_000, 100_000_000)))
    assert "device" not in w.delta(a, b) and not {k for k in w.delta(a, b) if k.startswith("device")}
    daemon.now = None  # a daemon without the counters (built before them): the window goes on without
    c = w.sample()
    assert c.of("device") is None and w.device(a, c) is None and w.device(c, c) is None
    plain = Window.of(NoNetns())  # type: ignore[arg-type]  # no device model: no source, no device time
    assert not any(isinstance(s, DeviceStats) for s in plain.sources)
    assert plain.device(plain.sample(), plain.sample()) is None


def test_each_record_and_cells_csv_row_carries_the_windows_device_time(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = 1")
    plan = load_plan_text(text)
    events: list = []
    fio = FakeFio(events)
    bed = FakeTestbed(plan, fio, events)
    bed.device_counted = DeviceCounters(reads=400, writes=100, queue_ns=75_000_000, service_ns=250_000_000)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio, testbed=bed).run()
    recs = rd.records()
    assert recs and all(r.device_time == DeviceTime(requests=500, reads=400, writes=100, queue_us=150.0,
                                                    service_us=500.0) for r in recs)
    rows = list(csv.DictReader((rd.path / "cells.csv").open()))
    assert len(rows) == len(recs)
    assert {(r["device_queue_us"], r["device_service_us"]) for r in rows} == {("150.0", "500.0")}


def test_without_a_device_model_the_record_and_row_say_nothing(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = 1")
    plan = load_plan_text(text)
    events: list = []
    fio = FakeFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FakeTestbed(plan, fio, events)).run()
    assert all(r.device_time is None for r in rd.records())
    rows = list(csv.DictReader((rd.path / "cells.csv").open()))
    assert rows and {(r["device_queue_us"], r["device_service_us"]) for r in rows} == {("", "")}
