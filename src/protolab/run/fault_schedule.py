"""A faulted cell's schedule (plan.faults): the lab's fault controls called at ``at`` and ``at + duration`` seconds
after the warm-up's end, from a thread of its own while fio runs, and the lab restored after the window whatever
ended it (an error, a signal: run.signals raises KeyboardInterrupt in the main thread, and ``stop`` runs in the
procedure's ``finally``).

The controls are the lab's (``Lab.faults``, lab.faults: ``link_down``, ``link_up``, ``server_kill``,
``server_start``, ``stall``, ``restore``), each returning at once; `FaultControls` says which this module calls.
What was done, when (monotonic seconds after the warm-up's end, and the wall clock) and how long each call took goes
into the record (results.faultwindow).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from ..analysis.heatmap import bin_window
from ..engine.faultlog import Timeline, io_errors, merge, read_logs, remove_logs
from ..engine.histlog import bin_edges_ns, read_hist_logs
from ..engine.status import documents, snapshots
from ..plan.faults import Fault
from ..results.faultwindow import FaultAction, FaultWindow
from ..results.files import now
from ..results.heatmapfile import write_heatmap


class FaultControls(Protocol):
    """The lab's fault controls this schedule calls (lab.faults.LabFaults)."""

    def link_down(self, port: int | None) -> None: ...

    def link_up(self, port: int | None) -> None: ...

    def server_kill(self, protocol: str) -> None: ...

    def server_start(self, protocol: str) -> None: ...

    def stall(self, seconds: float) -> None: ...

    def restore(self) -> list[str]: ...


#: A window's histogram logs may count a step more than its statuses (their ends differ by up to a step), never this
#: many times its I/Os.
LOGGED_MOST = 1.5


@dataclass(frozen=True)
class Step:
    """One call of the schedule: when (seconds after the warm-up's end), its words, and the call."""

    planned_s: float
    words: str
    call: Callable[[], object]


def steps(fault: Fault, protocol: str, controls: FaultControls) -> list[Step]:
    """The calls a fault makes, in order: its start at ``at``, its end at ``at + duration`` (an array stall ends by
    itself: the device model answers every held request after ``duration``)."""
    port = fault.link_port
    where = "all ports" if port is None else f"port {port}"
    if fault.kind == "link_down":
        return [Step(fault.at, f"link_down {where}", lambda: controls.link_down(port)),
                Step(fault.end, f"link_up {where}", lambda: controls.link_up(port))]
    if fault.kind == "server_restart":
        return [Step(fault.at, f"server_kill {protocol}", lambda: controls.server_kill(protocol)),
                Step(fault.end, f"server_start {protocol}", lambda: controls.server_start(protocol))]
    return [Step(fault.at, f"stall {fault.duration:g}s", lambda: controls.stall(fault.duration))]


@dataclass
class FaultSchedule:
    """Runs a fault's steps from ``start()`` (called at the warm-up's end) until done or ``stop()``."""

    fault: Fault
    protocol: str
    controls: FaultControls
    clock: Callable[[], float] = time.monotonic
    wait: Callable[[threading.Event, float], bool] = lambda event, seconds: event.wait(seconds)
    wall: Callable[[], str] = now
    actions: list[FaultAction] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    t0: float | None = None
    first_error_s: tuple[float, float] | None = None  # after the last status that counted no error, by the first
    _clean_at: float | None = None  # when the last status that counted none came
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """The measured window starts now: run the steps from a thread."""
        if self.t0 is not None:
            return
        self.t0 = self.clock()
        self._thread = threading.Thread(target=self.run, name=f"fault-{self.fault.name}", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Each step at its time after ``t0``, unless stopped first (the thread's body)."""
        assert self.t0 is not None
        for step in steps(self.fault, self.protocol, self.controls):
            left = step.planned_s - (self.clock() - self.t0)
            if left > 0 and self.wait(self._stop, left):
                return  # stopped: the window ended first; restore undoes what was done
            if self._stop.is_set():
                return
            at, wall = self.clock() - self.t0, self.wall()
            error = None
            try:
                step.call()
            except Exception as e:  # noqa: BLE001  (recorded; restore() after the window undoes what it can)
                error = f"{type(e).__name__}: {e}"[:300]
            self.actions.append(FaultAction(action=step.words, planned_s=step.planned_s, at_s=round(at, 4),
                                            wall=wall, took_s=round(self.clock() - self.t0 - at, 4), error=error))

    def seen(self, doc: dict) -> None:
        """A status document of fio came: when fio's first I/O error came, on this schedule's clock (s after the
        window's start). By its arrival, not by the status's own time: fio reads a status's counts only once the
        job's thread runs again (stat.c, ``rusage_sem``), so a status asked for during a stall is stamped with the
        time it was asked for and counts what the job did when it woke — an error that ended the stall."""
        if self.t0 is None or self.first_error_s is not None:
            return
        jobs = [j for snaps in snapshots([doc]).values() for s in snaps for j in s.jobs]
        if not jobs:
            return
        now = self.clock() - self.t0
        if any(int(j.get("total_err", 0) or 0) for j in jobs):
            self.first_error_s = (round(max(0.0, self._clean_at or 0.0), 3), round(now, 3))
        else:
            self._clean_at = now

    def stop(self) -> list[str]:
        """Stop the steps not yet done and restore the lab (links up, servers running, stall cleared): what it
        had to undo. Called in a ``finally``: it must not be skipped, and it waits for a call under way."""
        self._stop.set()
        try:
            if self._thread is not None:
                self._thread.join(timeout=120.0)
        finally:
            self.restored = list(self.controls.restore())
        return self.restored


def gather(prefix: Path, output: Path, *, warmup_s: float, window_s: float, store: Path,
           ended: bool = False) -> tuple[Timeline, int, str | None]:
    """After a faulted window: fio's 10 ms logs under ``prefix`` merged on the window's clock (engine.faultlog),
    kept compact in ``store`` (a JSON file: bins of IOPS and mean latency), the logs removed; and the I/O errors
    fio counted, from its last status in ``output`` (``ended``: fio gave up, and the error that ended each job
    counts: engine.faultlog.io_errors)."""
    timeline = merge(read_logs(prefix), warmup_s * 1000.0, window_s * 1000.0)
    remove_logs(prefix)
    store.write_text(json.dumps({"step_ms": timeline.step_ms, "t0_job_ms": round(warmup_s * 1000.0, 3),
                                 "jobs": timeline.jobs, "iops": timeline.iops, "lat_us": timeline.lat_us},
                                separators=(",", ":")))
    errors, first = io_errors(documents(output.read_text(errors="replace")), ended) if output.is_file() else (0, None)
    return timeline, errors, first


def keep_heatmap(run: Path, cell_id: str, prefix: Path, *, warmup_s: float, window_s: float, step: int,
                 remove: bool, ios: int) -> str | None:
    """After a window with histogram logs (plan.heatmap_option): fio's logs under ``prefix`` binned on the window's
    clock (analysis.heatmap) and kept as ``heatmap/<cell id>.json`` (results.heatmapfile); the logs removed unless a
    fault's timeline still reads them (``remove`` False). None when kept, else why not: the logs count far more
    I/Os than fio's statuses gave the window (``ios``) — a fio server without protolab's patch 0005 sends counts
    that grow through the run."""
    heatmap = bin_window(read_hist_logs(prefix), bin_edges_ns(), t0_ms=warmup_s * 1000.0, window_ms=window_s * 1000.0,
                         step_ms=step)
    if remove:
        remove_logs(prefix)
    if ios and heatmap.total() > LOGGED_MOST * ios:
        return (f"fio's histogram logs count {heatmap.total():,} I/Os in a window of {ios:,} (a fio server without "
                "protolab's patch 0005 sends counts that grow through the run)")
    write_heatmap(run, cell_id, heatmap)
    return None


def per_100ms(timeline: Timeline) -> list[float | None]:
    """The mean completion latency per 100 ms (µs), each 10 ms bin weighted by its IOPS."""
    k = max(1, 100 // timeline.step_ms)
    out: list[float | None] = []
    for i in range(0, len(timeline.iops), k):
        pairs = [(w, v) for w, v in zip(timeline.iops[i:i + k], timeline.lat_us[i:i + k]) if v is not None and w]
        weight = sum(w for w, _ in pairs)
        out.append(round(sum(w * v for w, v in pairs) / weight, 1) if weight else None)
    return out


def fault_window(value: str, fault: Fault | None, schedule: FaultSchedule | None, timeline: Timeline, errors: int,
                 first_error: str | None, file: str, ended_early: str | None = None) -> FaultWindow:
    """The record's account of a window of a plan with faults."""
    return FaultWindow(
        fault=value, kind=fault.kind if fault else None, at_s=fault.at if fault else None,
        duration_s=fault.duration if fault else None, port=fault.link_port if fault else None,
        actions=list(schedule.actions) if schedule else [], restored=list(schedule.restored) if schedule else [],
        errors=errors, first_error=first_error, first_error_s=schedule.first_error_s if schedule else None,
        step_ms=timeline.step_ms, iops=[round(v) for v in timeline.iops],
        lat_us=per_100ms(timeline), timeline_file=file, ended_early=ended_early)
