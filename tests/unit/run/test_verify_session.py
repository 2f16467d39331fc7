"""method.verify through a session (fake testbed, fio answering with real fio 3.33 output, tests/data/verify): the
prepare writes checksums, each window that writes is read back after it, and the record, cells.csv, the report and
`report --json` say what the read-back found."""

from __future__ import annotations

import csv
from pathlib import Path

from fakes import DATA, PLAN, FakeFio, FakeTestbed
from protolab.engine.readback import failed_lines
from protolab.plan.load import load_plan_text
from protolab.report.report_cli import report_json, write_report
from protolab.run import Study

VERIFY = DATA / "verify"
BAD_CELL = "tr3808-4k__b__h1s1q1__r2"


class VerifyingFio(FakeFio):
    """Windows as the fake fio answers them; a read-back answered as fio did for a clean file, or — for BAD_CELL —
    for the file with two bad chunks (its JSON, and its printed lines)."""

    def run_job(self, job, output, **kw):
        self.verify_lines = []
        name = Path(job).name
        if ".readback." not in name:
            self.jobs.append(Path(job).read_text())
            return super().run_job(job, output, **kw)
        cell = name.split(".")[0]
        self.events.append(f"read back {cell}")
        self.jobs.append(Path(job).read_text())
        answer = "readback-mismatch" if cell == BAD_CELL else "readback-clean"
        Path(output).write_text((VERIFY / f"{answer}.json").read_text())
        if cell == BAD_CELL:
            self.verify_lines = failed_lines((VERIFY / "readback-mismatch.out").read_text())
        return Path(output).read_text()


def _study(tmp_path, events):
    text = PLAN.format(dir=tmp_path).replace("prepare = false", 'prepare = true\nverify = "sha256"\ndata_size = "8M"')
    plan = load_plan_text(text)
    fio = VerifyingFio(events)
    fio.jobs = []
    return Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
                 testbed=FakeTestbed(plan, fio, events)), fio


def test_each_window_is_read_back_after_it_and_its_record_says_what_was_found(tmp_path):
    events: list[str] = []
    study, fio = _study(tmp_path, events)
    rd = study.run()
    measured = [e for e in events if e.startswith(("measure ", "read back "))]
    assert measured[0] == "measure prepare__a"
    windows = [e.removeprefix("measure ") for e in measured[1:] if e.startswith("measure ")]
    assert len(windows) == 12
    assert measured[1:] == [e for c in windows for e in (f"measure {c}", f"read back {c}")]  # each right after
    assert "verify=sha256" in fio.jobs[0] and "do_verify=0" in fio.jobs[0]  # the prepare writes checksums
    assert all("verify_backlog=64" in j for j in fio.jobs[1::2]) and all("rw=read" in j for j in fio.jobs[2::2])
    recs = {r.cell_id: r for r in rd.records()}
    assert all(r.status == "ok" and r.verification is not None for r in recs.values())
    bad = recs[BAD_CELL].verification
    assert (bad.algorithm, bad.verified_bytes, bad.mismatches, bad.first_bad_offset, bad.bad_offsets) == (
        "sha256", 8 * 2**20, 2, 1060864, [1060864, 6291456])
    assert all(r.verification.mismatches == 0 and r.verification.first_bad_offset is None
               for c, r in recs.items() if c != BAD_CELL)

    rows = {r["configuration"] + r["repeat"] + r["load_index"]: r
            for r in csv.DictReader((rd.path / "cells.csv").open())}
    assert len(rows) == 12
    for r in rows.values():
        assert float(r["verified_mib"]) == 8.0
        assert (r["mismatches"], r["first_bad_offset"]) == (("2", "1060864") if r["configuration"] == "b"
                                                            and r["repeat"] == "2" and r["load_index"] == "0"
                                                            else ("0", ""))

    path = write_report(rd, figures=False)
    md = (rd.path / "report.md").read_text()
    assert "## Data verified" in md
    assert "- a: 48 MiB verified (sha256, 6 windows), 0 mismatches" in md
    assert f"- b: 48 MiB verified (sha256, 6 windows), 2 mismatches, the first bad offset 1,060,864 (cell {BAD_CELL})" \
        in md
    html = (rd.path / "report.html").read_text()
    assert '<section id="verified">' in html and "a: 48 MiB verified (sha256, 6 windows), 0 mismatches" in html
    doc = report_json(rd, path)["verified"]
    assert [(v["configuration"], v["verified_mib"], v["mismatches"], v["first_bad_offset"], v["first_bad_cell"])
            for v in doc] == [("a", 48.0, 0, None, None), ("b", 48.0, 2, 1060864, BAD_CELL)]


def test_a_run_that_does_not_verify_reads_nothing_back_and_has_no_verification_columns(setup, tmp_path):
    events: list[str] = []
    rd = setup(events).run()
    assert not [e for e in events if e.startswith("read back")]
    header = (rd.path / "cells.csv").read_text().splitlines()[0].split(",")
    assert "verified_mib" not in header and "mismatches" not in header
    assert all(r.verification is None for r in rd.records())
    assert "Data verified" not in (Path(write_report(rd, figures=False)).parent / "report.md").read_text()


def test_an_aging_sequence_is_read_back_after_its_last_step_and_a_reading_workload_never(tmp_path, monkeypatch):
    """A read-back between two aging steps would break the load the next step continues: only the last step's."""
    import protolab.run.procedure as procedure
    from protolab.plan.expand import expand
    from protolab.run.progress import Silent

    text = PLAN.format(dir=tmp_path).replace("prepare = false", 'prepare = true\nverify = "crc32c"').replace(
        'workloads = ["tr3808-4k"]', 'workloads = ["tr3808-4k", "tr3808-init"]') + \
        '[stage.age]\nduration = "8s"\nevery = "2s"\n'
    plan = load_plan_text(text)
    assert plan.age_steps == 4
    read: list[str] = []
    monkeypatch.setattr(procedure, "read_back", lambda fio, cell, hosts, v, **kw: read.append(cell.id) or "checked")

    class RunDirStub:
        path = tmp_path

    proc = procedure.Procedure(plan, FakeTestbed(plan, FakeFio([]), []), RunDirStub(), Silent(), lambda phase: None)
    cells = expand(plan)
    answers = {c.id: proc.read_back(c, []) for c in cells}
    last = [c.id for c in cells if c.workload.name == "tr3808-4k" and c.step("age").index == 3]
    assert read == last and {c: a for c, a in answers.items() if a} == dict.fromkeys(last, "checked")
    # one per sequence (configuration × load point × repeat), none of the workload that only reads (tr3808-init)
    assert len(last) == 2 * 2 * 3 and len(cells) == 2 * len(last) * 4
