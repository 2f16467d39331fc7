"""A faulted cell through the session (fake testbed, fake fio): the job file asks fio for the 10 ms logs and to go on
after errors, the schedule starts at the warm-up's end and the lab is restored after the window, and the record
carries the merged timeline, fio's errors and what the lab undid; the "none" cells get a timeline and no schedule."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fakes import PLAN, FakeFio, FakeTestbed
from protolab.plan.faults import Fault
from protolab.plan.load import load_plan_text
from protolab.run import Study


class LoggingFio(FakeFio):
    """Writes what fio writes for a faulted job file: per job an IOPS and a latency log (10 ms), with a gap."""

    def run_job(self, job, output, **kw):
        text = Path(job).read_text()
        self.jobs = [*getattr(self, "jobs", []), text]
        prefix = re.search(r"^write_iops_log=(.*)$", text, re.M)
        if prefix:
            jobs = len(re.findall(r"^\[stream-", text, re.M))
            for n in range(1, jobs + 1):
                times = [t for t in range(10, 2001, 10) if not 300 < t <= 500]  # 200 ms with no completion
                Path(f"{prefix.group(1)}_iops.{n}.log").write_text("".join(f"{t}, 1000, 0, 0, 0\n" for t in times))
                Path(f"{prefix.group(1)}_clat.{n}.log").write_text("".join(f"{t}, 250000, 0, 0, 0\n" for t in times))
        return super().run_job(job, output, **kw)


class Controls:
    def __init__(self, events):
        self.events = events

    def restore(self):
        self.events.append("restore")
        return ["nothing"]


class FaultBed(FakeTestbed):
    def fault_controls(self, c):
        self.events.append(f"controls for {c.name}")
        return Controls(self.events), "nbd"


def test_a_faulted_cell_logs_at_10ms_is_restored_and_its_record_carries_the_timeline(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = 1").replace(
        "[[load_points]]\nstreams = 2\noio = 1\n", "")
    plan = load_plan_text(text)
    # the fault lasts past this window (2 s in the fake's answer): the window ends first, the schedule is stopped and the lab restored
    plan = plan.model_copy(update={"faults": [Fault(name="down", kind="link_down", at=5, duration=5, port=0)]})
    events: list = []
    fio = LoggingFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FaultBed(plan, fio, events)).run()
    recs = rd.records()
    assert [(r.configuration, r.coords["fault"]) for r in recs] == [("a", "none"), ("b", "none"), ("a", "down"),
                                                                    ("b", "down")]
    assert all("log_avg_msec=10" in j and "continue_on_error=all" in j for j in fio.jobs)
    assert [e for e in events if e in ("restore",) or str(e).startswith("controls")] == [
        "controls for a", "restore", "controls for b", "restore"]
    down = recs[2].fault
    assert down.fault == "down" and down.kind == "link_down" and down.actions == [] and down.restored == ["nothing"]
    assert len(down.iops) == 200 and sum(1 for v in down.iops if v == 0) == 20  # the answer's 2 s, the 200 ms gap
    assert down.iops[0] == 1000  # one job at 1000 IOPS: per 10 ms bin
    assert down.lat_us[0] == 250.0 and down.lat_us[3] is None  # 300..400 ms: no completion
    assert down.errors == 0 and down.timeline_file == f"timeline/{recs[2].cell_id}.json"
    stored = json.loads((rd.path / down.timeline_file).read_text())
    assert stored["step_ms"] == 10 and stored["iops"][40] == 0 and stored["iops"][60] == 1000
    assert not list((rd.path / "raw").glob("*.fault_*.log"))  # merged, then removed
    none = recs[0].fault
    assert none.fault == "none" and none.kind is None and len(none.iops) == 200
    # a faulted window's fio is watched for a hang (engine.hangwatch): the 1 s window, then the fault's 5 s and 10 s
    assert fio.watches[:2] == [None, None]
    assert [(w.duration_s, w.after_s) for w in fio.watches[2:]] == [(1.0, 15.0)] * 2


class GivingUpFio(LoggingFio):
    """fio whose initiator gives up under the fault: its statuses so far, then an error exit."""

    def run_job(self, job, output, **kw):
        text = super().run_job(job, output, **kw)
        if "fault-down" in Path(job).name:
            from protolab.errors import ToolError

            raise ToolError("cell x: fio failed: iscsi: request failed with error SENSE KEY:UNIT_ATTENTION(6)")
        return text


def test_fio_giving_up_under_a_fault_is_the_windows_outcome_not_a_failed_run(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = 1").replace(
        "[[load_points]]\nstreams = 2\noio = 1\n", "").replace('duration = "1s"', 'duration = "4s"')
    plan = load_plan_text(text)
    plan = plan.model_copy(update={"faults": [Fault(name="down", kind="link_down", at=1, duration=1, port=0)]})
    events: list = []
    fio = GivingUpFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FaultBed(plan, fio, events)).run()
    recs = rd.records()
    assert len(recs) == 4 and all(r.status == "ok" for r in recs) and rd.manifest().status == "complete"
    down = recs[2].fault
    assert down.ended_early.endswith("UNIT_ATTENTION(6)") and recs[0].fault.ended_early is None
    # the timeline runs to the window's planned 4 s: no completion after fio's end (its 2 s of logs)
    assert len(down.iops) == 400 and all(v == 0 for v in down.iops[200:])
    assert events.count("restore") == 2
    from protolab.analysis.fault_figures import rows, sentences

    (_, _, words), = sentences(rows(recs))
    assert "stalled 2.0 s (to the window's end), fio gave up in 1 of 1 repeats (iscsi: request failed" in words
    from protolab.report.sections.faults_section import row

    faulted = next(r for r in rows(recs) if r.kind is not None)
    cells = row(faulted)  # the table says fio gave up: its stall runs to the window's end, and what fio said
    assert cells[5] == "2.00 (to the window's end: fio gave up)"
    assert cells[7].endswith("; fio gave up in 1 of 1: iscsi: request failed with error SENSE KEY:UNIT_ATTENTION(6)")


class HangingFio(LoggingFio):
    """fio whose job hangs under the fault: the hang watch the window gave it stops it (engine.hangwatch)."""

    def run_job(self, job, output, *, on_poll=None, **kw):
        text = super().run_job(job, output, on_poll=on_poll, **kw)
        if on_poll is not None:
            on_poll.__self__.started -= 60.0  # a minute later, fio still running
            on_poll()
        return text


def test_a_hung_fio_is_stopped_and_the_window_says_so(tmp_path):
    text = PLAN.format(dir=tmp_path).replace("repeats = 3", "repeats = 1").replace(
        "[[load_points]]\nstreams = 2\noio = 1\n", "").replace('duration = "1s"', 'duration = "4s"')
    plan = load_plan_text(text)
    plan = plan.model_copy(update={"faults": [Fault(name="down", kind="link_down", at=1, duration=1, port=0)]})
    events: list = []
    fio = HangingFio(events)
    rd = Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
               testbed=FaultBed(plan, fio, events)).run()
    recs = rd.records()
    assert all(r.status == "ok" for r in recs) and recs[0].fault.ended_early is None
    # a minute moved back, plus the real time the poll took (60.1 s once on a loaded machine)
    said = recs[2].fault.ended_early
    assert re.match(r"fio hung: its jobs had not ended 60\.[0-9] s into a window of 4 s \(", said), said
    assert recs[2].fault.ended_early.endswith("; protolab stopped it") and events.count("restore") == 2
