"""The fault schedule (run.fault_schedule): the lab's controls called at `at` and `at + duration` after the warm-up's
end, what was done recorded with its times, and restore() whatever ends the window — with a fake lab and a fake
clock."""

from __future__ import annotations

import threading

import pytest

from protolab.plan.faults import Fault
from protolab.run.fault_schedule import FaultSchedule, steps


class FakeLab:
    """Records every call with the fake clock's time."""

    def __init__(self, clock, fail: str | None = None):
        self.calls: list[tuple[float, str, object]] = []
        self.clock, self.fail = clock, fail

    def _note(self, name, arg=None):
        self.calls.append((self.clock.t, name, arg))
        if name == self.fail:
            raise OSError(f"{name} failed")

    def link_down(self, port):
        self._note("link_down", port)

    def link_up(self, port):
        self._note("link_up", port)

    def server_kill(self, protocol):
        self._note("server_kill", protocol)

    def server_start(self, protocol):
        self._note("server_start", protocol)
        self.clock.t += 0.25  # it returns once the server listens

    def stall(self, seconds):
        self._note("stall", seconds)

    def restore(self):
        self._note("restore")
        return ["link of port 0 brought up"] if any(c[1] == "link_down" for c in self.calls) else []


class Clock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _schedule(fault: Fault, *, stop_at: float | None = None, fail: str | None = None):
    clock = Clock()
    lab = FakeLab(clock, fail)

    def wait(event: threading.Event, seconds: float) -> bool:  # the window ends at stop_at: the wait is cut short
        if stop_at is not None and clock.t - 100.0 + seconds >= stop_at:
            clock.t = 100.0 + stop_at
            event.set()
            return True
        clock.t += seconds
        return False

    s = FaultSchedule(fault, "nbd", lab, clock=clock, wait=wait, wall=lambda: f"wall+{clock.t - 100.0:g}")
    s.t0 = clock()
    s.run()  # the thread's body, in this thread
    return s, lab


def test_a_link_goes_down_at_at_and_up_at_at_plus_duration_then_the_lab_is_restored():
    s, lab = _schedule(Fault(name="p0", kind="link_down", at=5, duration=5, port=0))
    assert [(t - 100.0, name, arg) for t, name, arg in lab.calls] == [(5.0, "link_down", 0), (10.0, "link_up", 0)]
    assert [(a.action, a.planned_s, a.at_s, a.wall, a.error) for a in s.actions] == [
        ("link_down port 0", 5.0, 5.0, "wall+5", None), ("link_up port 0", 10.0, 10.0, "wall+10", None)]
    assert s.stop() == ["link of port 0 brought up"] and lab.calls[-1][1] == "restore"


def test_a_server_restart_kills_and_starts_the_protocols_server_and_records_how_long_the_start_took():
    s, lab = _schedule(Fault(name="rs", kind="server_restart", at=2, duration=3))
    assert [(t - 100.0, name, arg) for t, name, arg in lab.calls] == [(2.0, "server_kill", "nbd"),
                                                                       (5.0, "server_start", "nbd")]
    assert s.actions[1].took_s == pytest.approx(0.25)


def test_an_array_stall_is_one_call_with_its_duration():
    s, lab = _schedule(Fault(name="st", kind="array_stall", at=1, duration=0.5))
    assert [(t - 100.0, name, arg) for t, name, arg in lab.calls] == [(1.0, "stall", 0.5)]
    assert [a.action for a in s.actions] == ["stall 0.5s"]


def test_a_window_that_ends_early_stops_the_schedule_and_restore_undoes_what_was_done():
    s, lab = _schedule(Fault(name="all", kind="link_down", at=5, duration=5), stop_at=7.0)
    assert [name for _, name, _ in lab.calls] == ["link_down"]  # link_up never came: the window ended at 7 s
    assert lab.calls[0][2] is None and s.actions[0].action == "link_down all ports"
    assert s.stop() == ["link of port 0 brought up"]


def test_a_control_that_fails_is_recorded_and_the_schedule_goes_on():
    s, lab = _schedule(Fault(name="p0", kind="link_down", at=5, duration=5, port=0), fail="link_down")
    assert s.actions[0].error == "OSError: link_down failed" and s.actions[1].error is None


def test_restore_runs_even_when_the_window_is_interrupted_by_a_signal():
    lab = FakeLab(Clock())
    s = FaultSchedule(Fault(name="p0", kind="link_down", at=30, duration=5, port=0), "nbd", lab)
    with pytest.raises(KeyboardInterrupt):
        try:
            s.start()  # a real thread, waiting for 30 s
            raise KeyboardInterrupt("SIGTERM")  # as run.signals raises it in the main thread
        finally:
            s.stop()
    assert [c[1] for c in lab.calls] == ["restore"] and not s._thread.is_alive()


def test_steps_name_the_port_or_all_ports():
    lab = FakeLab(Clock())
    assert [st.words for st in steps(Fault(name="a", kind="link_down", at=1, duration=2), "iscsi", lab)] == [
        "link_down all ports", "link_up all ports"]
    assert [st.planned_s for st in steps(Fault(name="a", kind="link_down", at=1, duration=2), "iscsi", lab)] == [
        1.0, 3.0]


def test_a_windows_heatmap_is_kept_and_logs_from_an_unpatched_fio_server_are_refused(tmp_path):
    """keep_heatmap on fio's real logs (tests/data/fio-histlog: 2 jobs × 3,000 IOPS): kept with the window's I/Os;
    the same logs as fio 3.33's server sent them (t(k) = c(k) − t(k−1): counts that grow) refused, and said why."""
    import shutil

    from fakes import DATA
    from protolab.results.heatmapfile import read_heatmaps
    from protolab.run.fault_schedule import keep_heatmap

    raw = tmp_path / "raw"
    raw.mkdir()
    for n in (1, 2):
        shutil.copy(DATA / "fio-histlog" / f"hl_clat_hist.{n}.log", raw / f"c.fault_clat_hist.{n}.log")
    ios = 6000  # 1 s of the jobs' 1.5 s at 2 × 3,000 IOPS
    assert keep_heatmap(tmp_path, "c", raw / "c.fault", warmup_s=0.3, window_s=1.0, step=100, remove=True,
                        ios=ios) is None
    kept = read_heatmaps(tmp_path, ["c"])["c"]
    assert abs(kept.total() - ios) < 0.1 * ios and not list(raw.iterdir())
    for n in (1, 2):  # what fio 3.33's server would have sent for the same job
        lines, sent = (DATA / "fio-histlog" / f"hl_clat_hist.{n}.log").read_text().splitlines(), []
        prev = None
        for line in lines:
            head, counts = line.split(", ")[:3], [int(v) for v in line.split(", ")[3:]]
            cum = counts if prev is None else [a + b for a, b in zip(counts, prev[1])]
            t = cum if prev is None else [c - p for c, p in zip(cum, prev[0])]
            prev = (t, cum)
            sent.append(", ".join(head + [str(v) for v in t]))
        (raw / f"d.fault_clat_hist.{n}.log").write_text("\n".join(sent) + "\n")
    why = keep_heatmap(tmp_path, "d", raw / "d.fault", warmup_s=0.3, window_s=1.0, step=100, remove=True, ios=ios)
    assert why is not None and "patch 0005" in why and not (tmp_path / "heatmap" / "d.json").exists()


def test_the_first_error_is_placed_by_when_the_status_counting_it_came():
    """The captured fio client run (tests/data/fio-faultlog/client: its job "full" fails from 1.5 s): statuses before
    the window's start are not judged; the error lies after the last clean status's arrival, by the first that
    counted one."""
    from fakes import DATA
    from protolab.engine.status import documents

    docs = documents((DATA / "fio-faultlog" / "client" / "status.json").read_text())
    clock = Clock()
    s = FaultSchedule(Fault(name="down", kind="link_down", at=1.0, duration=1.0), "iscsi", FakeLab(clock),
                      clock=clock, wait=lambda event, seconds: True)
    s.seen(docs[0])  # before the window: nothing judged
    s.t0 = 100.0
    for t, doc in zip((100.9, 104.2, 105.0, 106.0), docs):  # the second status (one error) came late: 104.2 s
        clock.t = t
        s.seen(doc)
    assert s.first_error_s == (0.9, 4.2)
    quiet = FaultSchedule(Fault(name="down", kind="link_down", at=1.0, duration=1.0), "iscsi", FakeLab(clock),
                          clock=clock)
    quiet.t0 = 100.0
    quiet.seen(docs[0])
    assert quiet.first_error_s is None
