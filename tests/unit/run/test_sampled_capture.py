"""method.breakdown's capture of a window (run.sampled_capture): which window is captured, where its files go, the
sub-window on the window's clock, each point's record (and why it has no mean), and the capture's cost from the
window's own intervals — with fake captures and a fake clock (the real tcpdump and tshark: tests/lab)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.plan.protocols import PROTOCOLS
from protolab.results.records import DeviceTime
from protolab.run.sampled_capture import SampledCapture, capture_cost, captured_latency, point, sampled_capture
from protolab.telemetry.capture import Capture, Counts, Times

PLAN = """name = "b"
baseline = "a"
workloads = [{ name = "r", block_size = "4k", read_pct = 100, random_pct = 100 }]
load_points = [{ streams = 1, oio = 1 }]
[method]
repeats = 2
duration = "6s"
breakdown = true
[[configurations]]
name = "a"
target = "lab:iscsi"
"""
ISCSI = PROTOCOLS["iscsi"].srt


@dataclass
class Iv:
    t_s: float
    seconds: float
    iops: float
    lat_mean_us: float | None = None
    ios: int = 0


def test_the_cost_is_the_iops_of_whole_intervals_inside_against_those_outside():
    ivs = [Iv(1, 1, 100), Iv(2, 1, 80), Iv(3, 1, 90), Iv(4, 1, 100), Iv(5, 1, 120)]
    # captured 1–3 s: the intervals ending at 2 and 3 s inside, the three others outside
    assert capture_cost(ivs, 1.0, 3.0) == (85.0, pytest.approx(320 / 3, abs=0.1))
    assert capture_cost(ivs, 1.0, 2.5) == (80.0, pytest.approx(320 / 3, abs=0.1))  # 2–3 s is cut: in neither
    assert capture_cost(ivs, 1.05, 2.05) == (80.0, 102.5)  # 95 % of 1–2 s: captured; 5 % of 2–3 s: not
    assert capture_cost(ivs, 1.05, 2.15) == (80.0, pytest.approx(320 / 3, abs=0.1))  # 15 % of 2–3 s: in neither
    assert capture_cost([], 1.0, 2.0) == (None, None)


def test_fios_mean_over_the_capture_is_its_intervals_latency_weighted_by_their_ios():
    ivs = [Iv(1, 1, 100, 400.0, 100), Iv(2, 1, 80, 500.0, 80), Iv(3, 1, 90, 450.0, 120), Iv(4, 1, 100, 400.0, 100)]
    assert captured_latency(ivs, 1.0, 3.0) == (500.0 * 80 + 450.0 * 120) / 200  # the intervals ending at 2 and 3 s
    assert captured_latency(ivs, 1.0, 2.5) == 500.0  # 2–3 s is cut: not counted
    assert captured_latency([Iv(2, 1, 0, None, 0)], 1.0, 2.0) is None and captured_latency([], 1.0, 2.0) is None


class FakeTestbed:
    def __init__(self, runner=None):
        self.runner = runner

    def capture_points(self, c):
        return "iscsi", ISCSI, [("host", "x-h0", "xh0n0"), ("server", "x-st", "xs0")]


def test_only_each_cells_last_repeat_is_captured_into_captures(tmp_path):
    plan = load_plan_text(PLAN, source="p.toml")
    first, last = expand(plan)
    assert sampled_capture(plan, first, FakeTestbed(), tmp_path, 6.0) is None
    (tmp_path / "captures").mkdir()
    (tmp_path / "captures" / f"{last.id}-host.pcap").symlink_to(tmp_path / "victim")  # left by someone
    (tmp_path / "victim").write_text("keep")
    s = sampled_capture(plan, last, FakeTestbed(), tmp_path, 6.0)
    assert (s.start_s, s.seconds, s.protocol) == (1.0, 2.0, "iscsi")
    assert [(r, c.netns, c.ifname, c.port, c.path) for r, c in s.captures] == [
        ("host", "x-h0", "xh0n0", 3260, tmp_path / "captures" / f"{last.id}-host.pcap"),
        ("server", "x-st", "xs0", 3260, tmp_path / "captures" / f"{last.id}-server.pcap")]
    assert not (tmp_path / "captures" / f"{last.id}-host.pcap").exists() and (tmp_path / "victim").read_text() == "keep"
    off = load_plan_text(PLAN.replace("breakdown = true", ""), source="p.toml")
    assert sampled_capture(off, expand(off)[1], FakeTestbed(), tmp_path, 6.0) is None


class FakeCapture(Capture):
    def __init__(self, clock, log, name, counts=Counts(5000, 0), replies=((11.0, 8e-5), (12.0, 9e-5), (13.0, 1e-4))):
        super().__init__(None, f"ns-{name}", f"if-{name}", 3260, None, name)
        self.clock, self.log, self.fake_counts, self.fake_replies = clock, log, counts, list(replies)

    def start(self):
        self.log.append(("start", self.name, self.clock[0]))

    def interrupt(self):
        self.log.append(("interrupt", self.name, self.clock[0]))

    def stop(self):
        self.log.append(("stop", self.name, self.clock[0]))
        self.counts = self.fake_counts
        return self.counts

    def replies(self, dissector):
        return self.fake_replies


def _sampled(clock, log, caps, stop_at=None):
    def wait(event, seconds):
        if stop_at is not None and clock[0] + seconds > stop_at:
            clock[0] = stop_at
            return True
        clock[0] += seconds
        return False

    return SampledCapture("iscsi", ISCSI, caps, 1.0, 2.0, clock=lambda: clock[0], wait=wait)


def test_the_captures_run_from_1s_for_the_sub_window_on_the_windows_clock():
    clock, log = [10.0], []
    s = _sampled(clock, log, [("host", FakeCapture(clock, log, "h")), ("server", FakeCapture(clock, log, "s"))])
    s.t0 = 10.0
    s.run()
    s.stop()  # nothing left to stop: each tcpdump was stopped once
    assert log == [("start", "h", 11.0), ("start", "s", 11.0), ("interrupt", "h", 13.0), ("interrupt", "s", 13.0),
                   ("stop", "h", 13.0), ("stop", "s", 13.0)]  # both interrupted before either is waited for
    ivs = [Iv(t, 1, 100 if t in (2, 3) else 110) for t in range(1, 7)]
    s.captures[1][1].fake_replies = [(11.5, 7e-5), (12.0, 8e-5), (13.5, 1e-4)]  # it started and stopped later
    st = s.result(ivs)
    assert (st.start_s, st.seconds, st.iops_captured, st.iops_uncaptured) == (1.0, 2.0, 100.0, 110.0)
    # both read from 11.5 to 13.0, when both ran
    assert [(p.role, p.point, p.srt_us, p.pairs, p.frames, p.note) for p in st.points] == [
        ("host", "ns-h/if-h", 95.0, 2, 5000, None), ("server", "ns-s/if-s", 75.0, 2, 5000, None)]


def test_the_device_models_counters_are_read_as_the_captures_start_and_stop():
    from protolab.telemetry.devicetime import DeviceCounters

    clock, log = [10.0], []
    s = _sampled(clock, log, [("host", FakeCapture(clock, log, "h"))])
    readings = iter([DeviceCounters(100, 0, 0, 1e6), DeviceCounters(600, 0, 5e5, 101e6)])
    s.device = lambda: (log.append(("device", "-", clock[0])), next(readings))[1]
    s.t0 = 10.0
    s.run()
    assert [e for e in log if e[0] == "device"] == [("device", "-", 11.0), ("device", "-", 13.0)]
    st = s.result([Iv(t, 1, 100, 400.0, 100) for t in range(1, 7)])
    assert st.device == DeviceTime(requests=500, reads=500, writes=0, queue_us=1.0, service_us=200.0)
    assert st.lat_captured_us == 400.0
    s = _sampled([0.0], [], [("host", FakeCapture([0.0], [], "h"))])
    s.device = lambda: (_ for _ in ()).throw(OSError("no answer"))
    s.t0 = 0.0
    s.run()
    assert s.result([]).device is None  # the daemon did not answer: no device time, the capture's times kept


def test_a_window_that_ends_first_stops_the_captures_or_never_starts_them():
    clock, log = [0.0], []
    s = _sampled(clock, log, [("host", FakeCapture(clock, log, "h"))], stop_at=2.0)
    s.t0 = 0.0
    s.run()
    assert log == [("start", "h", 1.0), ("interrupt", "h", 2.0), ("stop", "h", 2.0)] and s.result([]).seconds == 1.0
    clock, log = [0.0], []
    early = _sampled(clock, log, [("host", FakeCapture(clock, log, "h"))], stop_at=0.5)
    early.t0 = 0.0
    early.run()
    early.stop()
    assert log == [] and early.result([]).points[0].note == "not captured: the window ended before the capture"


def test_a_point_says_why_it_has_no_mean_or_what_it_missed():
    clock, log = [0.0], []
    dropped = point("host", _stopped(FakeCapture(clock, log, "h", counts=Counts(900, 12))), ISCSI, Times(5, 80.5))
    assert (dropped.srt_us, dropped.dropped, dropped.note) == (80.5, 12, "tcpdump dropped 12 frame(s): requests "
                                                               "or replies the mean misses")
    none = point("server", _stopped(FakeCapture(clock, log, "s")), ISCSI, Times(0, None))
    assert (none.srt_us, none.pairs, none.note) == (None, 0, "tshark's dissector matched no reply (iscsi.time) "
                                                    "among 5000 frames")


def _stopped(c):
    c.stop()
    return c


def test_start_runs_the_schedule_in_a_thread_and_stop_joins_it():
    clock, log = [0.0], []
    s = SampledCapture("iscsi", ISCSI, [("host", FakeCapture(clock, log, "h"))], 1.0, 2.0, clock=lambda: clock[0],
                       wait=lambda event, seconds: event.wait(5.0))
    s.start()
    s.stop()
    assert isinstance(s._thread, threading.Thread) and not s._thread.is_alive() and log == []


def test_a_tshark_that_fails_is_the_points_note_and_the_other_point_keeps_its_mean():
    from protolab.errors import ToolError

    class Failing(FakeCapture):
        def replies(self, dissector):
            raise ToolError("tshark -n -r …: did not finish within 300 s")

    clock, log = [0.0], []
    s = _sampled(clock, log, [("host", FakeCapture(clock, log, "h")), ("server", Failing(clock, log, "s"))])
    s.t0 = 0.0
    s.run()
    host, server = s.result([]).points
    assert (host.srt_us, host.pairs) == (pytest.approx(90.0), 3)
    assert (server.srt_us, server.frames, server.note) == (None, 5000, "tshark: tshark -n -r …: did not finish "
                                                           "within 300 s")
