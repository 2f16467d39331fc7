"""A run directory cannot turn protolab (as root) against the machine: symlinks anywhere are refused in one line
before anything is written, a manifest of the wrong shape is one line, and new runs are private (0750/0640)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from conftest import NOBODY, as_nobody, run_cli

PLAN = """
name = "trust"
baseline = "psync"
workloads = ["tr3808-4k"]
[targets.scratch]
url = "{dir}"
[[configurations]]
name = "psync"
target = "scratch"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "1s"
duration = "1s"
repeats = {repeats}
data_size = "8M"
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A complete local run (real fio), made once; each test works on its own copy."""
    base = tmp_path_factory.mktemp("trust")
    (base / "data").mkdir()
    plan = base / "p.toml"
    plan.write_text(PLAN.format(dir=base / "data", repeats=1))
    p = run_cli("run", plan, "--results", base / "results", timeout=300)
    assert p.returncode == 0, p.stderr
    return next((base / "results").iterdir())


@pytest.fixture
def run(finished, tmp_path):
    copy = tmp_path / "results" / finished.name
    shutil.copytree(finished, copy, symlinks=True)
    return copy


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim.txt"
    v.write_text("keep me\n")
    return v


def _one_line(p, *expect):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    for e in expect:
        assert e in p.stderr, p.stderr


@pytest.mark.parametrize("planted", ["tables/configurations.csv", "tables", "report.md", "figures"])
def test_report_refuses_a_run_directory_with_a_symlink(run, victim, planted):
    target = run / planted
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)
    target.symlink_to(victim if planted not in ("tables", "figures") else victim.parent)
    before = sorted(p.name for p in victim.parent.iterdir())
    _one_line(run_cli("report", run), f"{planted} is a symlink")
    assert victim.read_text() == "keep me\n" and sorted(p.name for p in victim.parent.iterdir()) == before


@pytest.mark.parametrize("planted", ["records.jsonl", "series.csv", "cells.csv"])
def test_resume_refuses_a_run_directory_with_a_symlink(run, victim, planted):
    m = json.loads((run / "manifest.json").read_text())
    m["status"] = "interrupted"
    (run / "manifest.json").write_text(json.dumps(m))
    (run / planted).unlink()
    (run / planted).symlink_to(victim)
    _one_line(run_cli("resume", run, timeout=120), f"{planted} is a symlink")
    assert victim.read_text() == "keep me\n"


def test_a_symlink_planted_after_the_check_is_not_appended_through(run, victim):
    from protolab.results.files import append_lines, atomic_write

    (run / "series.csv").unlink()
    (run / "series.csv").symlink_to(victim)
    with pytest.raises(Exception):
        append_lines(run / "series.csv", ["1,2,3"])
    atomic_write(run / "cells.csv.new", "x\n")  # a rename replaces a link at the name, never its target
    (run / "report.md").unlink()
    (run / "report.md").symlink_to(victim)
    atomic_write(run / "report.md", "new\n")
    assert victim.read_text() == "keep me\n" and not (run / "report.md").is_symlink()


@pytest.mark.parametrize("manifest, field", [("5", "a JSON object is expected"),
                                             ('{"schema_version": 2, "dimensions": 5}', "field 'dimensions'"),
                                             ('{"schema_version": 2, "sessions": "x"}', "field 'sessions'"),
                                             ('{"schema_version": 2, "plan": [1]}', "field 'plan'"),
                                             ("{not json", "not JSON at line 1")])
def test_a_manifest_of_the_wrong_shape_is_one_line(run, manifest, field):
    (run / "manifest.json").write_text(manifest)
    for args in (("report", run), ("resume", run), ("compare", run, run), ("detach", run)):
        _one_line(run_cli(*args, timeout=120), "manifest.json", field)


def test_detach_of_a_run_with_nothing_attached_says_so_and_touches_nothing(run, tmp_path):
    p = run_cli("detach", run)
    assert p.returncode == 0 and "the run is complete; it detached everything at its end" in p.stdout, p
    m = json.loads((run / "manifest.json").read_text())
    m["status"] = "interrupted"
    (run / "manifest.json").write_text(json.dumps(m))
    before = {q.name: q.stat().st_mtime_ns for q in run.iterdir()}
    p = run_cli("detach", run)
    assert p.returncode == 0 and "nothing is listed as attached" in p.stdout, p
    assert {q.name: q.stat().st_mtime_ns for q in run.iterdir()} == before
    _one_line(run_cli("detach", tmp_path / "nowhere"), "nowhere")


def test_as_root_protolab_writes_no_run_directory_another_user_can_change(run):
    os.chown(run / "tables", NOBODY, NOBODY)
    _one_line(run_cli("report", run), "tables: owned by uid 65534", "run this command as that user")
    os.chown(run / "tables", 0, 0)
    os.chmod(run, 0o777)
    _one_line(run_cli("report", run), "(mode 777)")


def test_a_new_run_is_private_unless_the_operator_widens_it(tmp_path):
    (tmp_path / "data").mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dir=tmp_path / "data", repeats=1))
    for umask, dmode, fmode in (("", 0o750, 0o640), ("022", 0o755, 0o644)):
        results = tmp_path / f"r{umask}"
        p = run_cli("run", plan, "--results", results, env={"PROTOLAB_UMASK": umask} if umask else
                    {"PROTOLAB_UMASK": "027"}, timeout=300)
        assert p.returncode == 0, p.stderr
        run = next(results.iterdir())
        modes = {str(x.relative_to(run)): stat.S_IMODE(x.stat().st_mode) for x in [run, *run.rglob("*")]}
        assert stat.S_IMODE(results.stat().st_mode) == dmode
        assert {k: v for k, v in modes.items() if (run / k).is_dir() and v != dmode} == {}
        assert {k: v for k, v in modes.items() if (run / k).is_file() and v != fmode} == {}
    _one_line(run_cli("validate", plan, env={"PROTOLAB_UMASK": "abc"}), "PROTOLAB_UMASK=abc")
    # a umask that lets others write would make directories make_dir then refuses
    _one_line(run_cli("validate", plan, env={"PROTOLAB_UMASK": "002"}), "PROTOLAB_UMASK=002 lets other users write")


def test_resume_names_the_stored_plan_and_its_hash(tmp_path):
    import hashlib

    (tmp_path / "data").mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dir=tmp_path / "data", repeats=2))
    p = run_cli("run", plan, "--results", tmp_path / "r", timeout=300)
    assert p.returncode == 0, p.stderr
    run = next((tmp_path / "r").iterdir())
    m = json.loads((run / "manifest.json").read_text())
    m["status"] = "interrupted"
    (run / "manifest.json").write_text(json.dumps(m))
    lines = [json.dumps(r) for r in map(json.loads, (run / "records.jsonl").read_text().splitlines())][:1]
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    p = run_cli("resume", run, timeout=300)
    assert p.returncode == 0, p.stderr
    digest = hashlib.sha256(m["plan_text"].encode()).hexdigest()[:12]
    assert f"resuming {run.name}: plan 'trust', sha256 {digest}" in p.stdout


# -- directories protolab makes where another user can write the parent (issue 40, item 5) -------------------------

@pytest.fixture
def shared():
    """A shared directory as /tmp is: root's, world-writable and sticky (a fresh one under /var/tmp)."""
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root: the attacker is another user")
    d = tempfile.mkdtemp(prefix="pl-shared-", dir="/var/tmp")
    os.chmod(d, 0o1777)
    try:
        yield Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _race(monkeypatch, name: str, *attack) -> list:
    """The attacker wins the race: just before protolab's first mkdir of a directory called ``name`` (after every
    check that it is missing), ``attack`` runs as nobody. Returns a list that holds the attack once it ran."""
    real, ran = os.mkdir, []

    def mkdir(path, *args, **kw):
        if not ran and os.path.basename(os.fspath(path)) == name:
            ran.append(as_nobody(*attack))
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "mkdir", mkdir)
    return ran


def _start():
    from protolab.plan.migrate import PLAN_FORMAT
    from protolab.results.manifest import Provenance, RunStart

    return RunStart(plan={"name": "t"}, plan_text="", plan_format=PLAN_FORMAT,
                    provenance=Provenance(protolab="0", kernel="6", fio_version="fio"))


def test_a_symlink_planted_at_compare_out_in_the_race_is_refused_and_nothing_is_written_through_it(
        run, shared, tmp_path, monkeypatch):
    from protolab.report.report_cli import run_compare
    from protolab.trust import UnsafePath

    elsewhere = tmp_path / "elsewhere"  # root's: where the link points
    elsewhere.mkdir()
    ran = _race(monkeypatch, "out", "ln", "-s", elsewhere, shared / "out")
    with pytest.raises(UnsafePath, match=re.escape(f"{shared / 'out'} is a symlink")):
        run_compare(run, run, out=shared / "out")
    assert ran and (shared / "out").is_symlink() and list(elsewhere.iterdir()) == []


def test_a_directory_planted_at_compare_out_in_the_race_is_refused_and_left_empty(run, shared, monkeypatch):
    from protolab.report.report_cli import run_compare
    from protolab.trust import UnsafePath

    ran = _race(monkeypatch, "out", "mkdir", "-m", "777", shared / "out")
    with pytest.raises(UnsafePath, match="out was made by uid 65534"):
        run_compare(run, run, out=shared / "out" / "deeper")
    assert ran and list((shared / "out").iterdir()) == []


def test_compare_out_planted_before_the_command_is_one_line_and_nothing_is_written(run, shared, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    as_nobody("ln", "-s", elsewhere, shared / "link")
    as_nobody("mkdir", shared / "theirs")
    _one_line(run_cli("compare", run, run, "--out", shared / "link", timeout=120), "link is a symlink")
    _one_line(run_cli("compare", run, run, "--out", shared / "theirs", timeout=120), "owned by uid 65534")
    assert list(elsewhere.iterdir()) == [] and list((shared / "theirs").iterdir()) == []


def test_a_results_parent_made_by_another_user_in_the_race_is_refused(shared, monkeypatch):
    from protolab.results.rundir import RunDir
    from protolab.trust import UnsafePath

    ran = _race(monkeypatch, "results", "mkdir", "-m", "777", shared / "results")
    with pytest.raises(UnsafePath, match="results was made by uid 65534"):
        RunDir.create(shared / "results", "t", _start())
    assert ran and list((shared / "results").iterdir()) == []


def test_a_results_directory_others_can_write_is_refused_and_roots_own_cannot_be_raced_into(shared, monkeypatch):
    from protolab.results.rundir import RunDir
    from protolab.trust import UnsafePath

    (shared / "results").mkdir()
    os.chmod(shared / "results", 0o1777)  # as shared as /tmp: anyone could take the run directory's name first
    with pytest.raises(UnsafePath, match="results is writable by group or others"):
        RunDir.create(shared / "results", "t", _start())
    assert list((shared / "results").iterdir()) == []
    os.chmod(shared / "results", 0o750)
    real, tried = os.mkdir, []

    def mkdir(path, *args, **kw):  # nobody tries to take the run directory's name just before protolab makes it
        if not tried and os.fspath(path).endswith("-t"):
            tried.append(as_nobody("mkdir", shared / "results" / path, check=False))
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "mkdir", mkdir)
    rd = RunDir.create(shared / "results", "t", _start())
    assert tried and tried[0].returncode != 0 and rd.path.stat().st_uid == 0


def test_a_results_directory_protolab_makes_itself_in_a_shared_directory_passes(shared, tmp_path):
    (tmp_path / "data").mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dir=tmp_path / "data", repeats=1))
    p = run_cli("run", plan, cwd=shared, timeout=300)  # the default ./results, run from a /tmp
    assert p.returncode == 0, p.stderr
    results = shared / "results"
    (run,) = results.iterdir()
    st = results.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o750)
    assert (run / "tables").is_dir() and (run / "figures").is_dir() and (run / "report.html").is_file()
    assert {x.stat().st_uid for x in [run, *run.rglob("*")]} == {0}
    _one_line(run_cli("run", plan, "--results", shared, timeout=120), "is writable by group or others")
    assert sorted(q.name for q in shared.iterdir()) == ["results"]


def test_make_dir_makes_parents_as_asked_and_refuses_what_it_did_not_make(shared, tmp_path):
    from protolab.trust import UnsafePath, make_dir

    old = os.umask(0o022)
    try:
        assert make_dir(shared / "a" / "b", 0o750) == shared / "a" / "b"
    finally:
        os.umask(old)
    assert [(d.stat().st_uid, stat.S_IMODE(d.stat().st_mode)) for d in (shared / "a", shared / "a" / "b")] == \
        [(0, 0o750)] * 2
    assert make_dir(shared / "a") == shared / "a"  # its own, again
    with pytest.raises(UnsafePath, match="a exists already"):
        make_dir(shared / "a", exist_ok=False)
    as_nobody("touch", shared / "file")
    as_nobody("ln", "-s", tmp_path, shared / "link")
    as_nobody("mkdir", shared / "theirs")
    before = sorted(tmp_path.iterdir())
    for name, why in (("file", "is not a directory"), ("link", "is a symlink"), ("theirs", "owned by uid 65534")):
        for path in (shared / name, shared / name / "sub"):
            with pytest.raises(UnsafePath, match=why):
                make_dir(path)
    assert sorted(tmp_path.iterdir()) == before and list((shared / "theirs").iterdir()) == []


def test_a_target_directory_planted_in_the_race_is_refused_and_nothing_is_made_through_it(shared, tmp_path,
                                                                                           monkeypatch):
    from protolab.engine.targets import create_file
    from protolab.errors import TargetError

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = _race(monkeypatch, "scratch", "ln", "-s", elsewhere, shared / "scratch")
    with pytest.raises(TargetError, match="scratch is a symlink"):
        create_file(shared / "scratch" / "protolab.dat", 1 << 20)
    assert ran and list(elsewhere.iterdir()) == []
