"""method.verify's fio side (engine.jobfile's options, engine.readback): the job files, and what real fio 3.33 printed
for bad blocks (tests/data/verify, see its README) read back into offsets and counts."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from protolab.engine.jobfile import layout, render_fill, render_prepare, render_streams
from protolab.engine.parse import job_entries, load_json, parse_fio_json
from protolab.engine.readback import Mismatch, failed_lines, mismatches, read_back, render_readback
from protolab.engine.targets import resolve
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.plan.verify import verification
from protolab.run.recording import verified

DATA = Path(__file__).resolve().parents[2] / "data" / "verify"
CAPTURED = "/work/wt-verify/.tmp-f3/cap/data"  # where the fixtures' file was

PLAN = '''name = "v"
baseline = "a"
workloads = [{ name = "w", block_size = "4k", read_pct = 50, random_pct = 100, oio = 4 },
             { name = "r", block_size = "4k", read_pct = 100, random_pct = 100, oio = 4 }]
load_points = [{ streams = 2 }]
[method]
data_size = "8M"
verify = "crc32c"
[[configurations]]
name = "a"
target = "CAPTURED"
ioengine = "libaio"
'''.replace("CAPTURED", CAPTURED)


def _setup(workload: str = "w"):
    plan = load_plan_text(PLAN)
    cell = next(c for c in expand(plan) if c.workload.name == workload)
    a = resolve(CAPTURED, size=plan.method.data_size, ioengine="libaio", direct=True)
    return plan, cell, a, [s for h in layout(cell, lambda h, g: a) for s in h]


def _ini(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.read_string(text)
    return cp


def test_the_job_files_are_those_fio_ran_for_the_fixtures():
    plan, cell, a, streams = _setup()
    v = verification(plan)
    assert render_prepare(a, v) == (DATA / "prepare.fio").read_text()
    assert render_streams(cell, streams, runtime=3, verify=v) == (DATA / "window.fio").read_text()
    assert render_readback(cell, streams, v) == (DATA / "readback.fio").read_text()


def test_a_window_that_writes_checksums_and_reads_back_and_one_that_only_reads_does_not():
    plan, cell, a, streams = _setup()
    g = _ini(render_streams(cell, streams, runtime=30, verify=verification(plan)))["global"]
    assert {k: g[k] for k in ("verify", "verify_interval", "verify_backlog", "verify_fatal", "continue_on_error",
                              "verify_state_save", "random_generator", "norandommap")} == {
        "verify": "crc32c", "verify_interval": "4096", "verify_backlog": "64", "verify_fatal": "0",
        "continue_on_error": "verify", "verify_state_save": "0", "random_generator": "lfsr", "norandommap": "1"}
    # a configuration's own generator is kept (its fio table comes after)
    g = _ini(render_streams(cell, streams, runtime=30, verify=verification(plan),
                            extra={"random_generator": "tausworthe64"}))["global"]
    assert g["random_generator"] == "tausworthe64" and g["verify"] == "crc32c"
    plan, cell, a, streams = _setup("r")  # the same plan's workload that only reads
    keys = lambda text: {k for s in _ini(text).values() for k in s}  # noqa: E731
    verifying = {"verify", "verify_interval", "verify_backlog", "continue_on_error", "random_generator", "do_verify"}
    assert not keys(render_streams(cell, streams, runtime=30, verify=verification(plan))) & verifying
    assert not keys(render_streams(cell, streams, runtime=30)) & verifying and not keys(render_prepare(a)) & verifying


def test_the_fill_writes_checksums_without_a_read_pass():
    plan, _, a, _ = _setup()
    g = _ini(render_fill(a, 0, 2**20, 65536, 25, verification(plan)))["global"]
    assert (g["verify"], g["verify_interval"], g["do_verify"], g["verify_state_save"]) == ("crc32c", "4096", "0", "0")


def test_the_read_back_reads_each_chunk_of_each_region_once():
    plan, cell, _, streams = _setup()
    cp = _ini(render_readback(cell, streams, verification(plan)))
    g = cp["global"]
    assert (g["rw"], g["bs"], g["verify_interval"], g["continue_on_error"]) == ("read", "4096", "4096", "verify")
    regions = [(int(cp[s]["offset"]), int(cp[s]["size"])) for s in cp.sections() if s.startswith("readback-")]
    assert regions == [(0, 4 * 2**20), (4 * 2**20, 4 * 2**20)]
    assert all(cp[s]["filename"] == CAPTURED for s in cp.sections() if s != "global")


def test_fio_s_lines_give_each_bad_chunk_once():
    out = (DATA / "readback-mismatch.out").read_text()
    assert mismatches(out) == [Mismatch(1060864, 4096, CAPTURED), Mismatch(6291456, 4096, CAPTURED)]
    assert len(failed_lines(out)) == 2
    window = (DATA / "window-mismatch.out").read_text()
    bad = mismatches(window)
    assert len(bad) == 32 and len({m.offset for m in bad}) == 32 and all(m.length == 4096 for m in bad)
    assert mismatches(window.splitlines() * 2) == bad  # a chunk named twice counts once
    # a client run: its servers' lines are in the output file before the JSON ('<vm> …'), some run together
    client = (DATA / "readback-client.json").read_text()
    assert len(mismatches(failed_lines(client))) == 137
    assert sum(int(j["total_err"]) for j in job_entries(load_json(client))) == 137
    assert mismatches("Jobs: 2 (f=2): [R(2)][100.0%]\nfio: io_u error on file x: Input/output error") == []


def test_a_job_that_went_on_past_failed_checks_did_not_fail():
    for name in ("window-mismatch.json", "readback-mismatch.json", "readback-client.json"):
        doc = load_json((DATA / name).read_text())
        assert all(int(j["error"]) == 84 for j in job_entries(doc))
        result = parse_fio_json(doc)
        assert result.errors == 0 and result.error_messages == []
    doc = load_json((DATA / "readback-mismatch.json").read_text())
    for j in doc["jobs"]:
        j["error"] = 5  # EIO: an I/O error is a failure, with or without continue_on_error
    assert parse_fio_json(doc).errors == 2
    for j in doc["jobs"]:
        j["error"] = 84
        del j["total_err"]  # EILSEQ without continue_on_error: the job ended on it
    assert parse_fio_json(doc).errors == 2


class _Fio:
    """fio as the read-back calls it, answering with a captured run's output and printed lines."""

    def __init__(self, output: str, printed: str = ""):
        self.output, self.printed, self.calls = output, printed, []

    def run_job(self, job, output, *, netns=None, timeout, label, **_):
        self.calls.append((Path(job).read_text(), netns, timeout))
        Path(output).write_text((DATA / self.output).read_text())
        self.verify_lines = failed_lines((DATA / self.printed).read_text()) if self.printed else []
        return Path(output).read_text()


def test_read_back_counts_the_bytes_checked_and_names_the_bad_chunks(tmp_path):
    from protolab.engine.measure import HostRun

    plan, cell, _, streams = _setup()
    hosts = [HostRun("this-machine", None, None, streams)]
    clean = read_back(_Fio("readback-clean.json"), cell, hosts, verification(plan), folder=tmp_path, label="rb")
    assert (clean.verified_bytes, clean.bad, clean.counted, clean.errors) == (8 * 2**20, [], 0, [])
    fio = _Fio("readback-mismatch.json", "readback-mismatch.out")
    bad = read_back(fio, cell, hosts, verification(plan), folder=tmp_path, label="rb")
    assert bad.verified_bytes == 8 * 2**20 and [m.offset for m in bad.bad] == [1060864, 6291456]
    assert bad.counted == 2 and bad.errors == []
    job, netns, timeout = fio.calls[0]
    assert job == render_readback(cell, streams, verification(plan)) and timeout == pytest.approx(120 + 8 * 2**20 / 1e6)
    assert (tmp_path / f"{cell.id}.readback.this-machine.fio").read_text() == job


def test_a_window_s_record_counts_each_bad_chunk_once_and_keeps_the_lowest_offset(tmp_path):
    from protolab.engine.readback import ReadBack

    during = (DATA / "window-mismatch.out").read_text().splitlines()
    window_bad = sorted(m.offset for m in mismatches(during))
    after = ReadBack(8 * 2**20, [Mismatch(window_bad[0], 4096, "f"), Mismatch(7 * 2**20, 4096, "f")], 2)
    v = verified("crc32c", 4096, during, after)
    assert (v.verified_bytes, v.mismatches, v.during_window) == (8 * 2**20, 33, 32)  # one chunk found twice
    assert v.first_bad_offset == window_bad[0] and v.bad_offsets == sorted([*window_bad, 7 * 2**20])[:20]
    clean = verified("md5", 4096, [], ReadBack(8 * 2**20))
    assert (clean.mismatches, clean.first_bad_offset, clean.bad_offsets, clean.algorithm) == (0, None, [], "md5")
    # fio counted more failed checks than it printed lines for: the count stands
    assert verified("crc32c", 4096, [], ReadBack(2**20, [Mismatch(4096, 4096, "f")], 5)).mismatches == 5
