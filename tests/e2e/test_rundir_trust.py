"""A run directory cannot turn protolab (as root) against the machine: symlinks anywhere are refused in one line
before anything is written, a manifest of the wrong shape is one line, and new runs are private (0750/0640)."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from conftest import NOBODY, run_cli

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
