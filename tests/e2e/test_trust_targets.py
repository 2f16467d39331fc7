"""Targets on the load hosts are never checked or created on this machine, and need allow_overwrite."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

PLAN = """
name = "remote"
baseline = "a"
workloads = ["tr3808-4k"]
[[hosts]]
name = "esx1"
agent = "ssh://root@198.18.0.5"
[[configurations]]
name = "a"
target = {{ url = "{url}"{extra} }}
[[load_points]]
streams = 1
oio = 1
[method]
duration = "1s"
repeats = 1
data_size = "8M"
"""


def test_a_remote_target_needs_allow_overwrite_and_is_not_made_here(tmp_path):
    for url in ("/dev/sdz", str(tmp_path / "here" / "data.dat")):
        plan = tmp_path / "p.toml"
        plan.write_text(PLAN.format(url=url, extra=""))
        p = run_cli("validate", plan)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert f"target {url} (configuration 'a') is on the load hosts, which protolab cannot look into; add " \
               "allow_overwrite = true" in p.stderr
        plan.write_text(PLAN.format(url=url, extra=", allow_overwrite = true"))
        p = run_cli("validate", plan)
        assert p.returncode == 0, p.stderr
    assert not (tmp_path / "here").exists()


REPLAY = """
name = "replay"
baseline = "a"
workloads = [{{ name = "t", replay = "{trace}", oio = 1 }}]
[[configurations]]
name = "a"
target = "{data}"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
duration = "1s"
repeats = 1
data_size = "8M"
"""


def _trace(path):
    path.write_text("fio version 2 iolog\n/x add\n/x open\n/x read 0 4096\n/x read 8192 4096\n/x close\n")
    return path


def test_a_trace_the_sudo_user_cannot_read_is_refused(tmp_path):
    import os
    import shutil
    import tempfile

    from conftest import NOBODY

    base = tempfile.mkdtemp(prefix="pl-trace-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        secret = _trace(Path(base) / "secret.iolog")
        secret.chmod(0o600)  # root's alone
        (tmp_path / "d").mkdir()
        plan = tmp_path / "p.toml"
        plan.write_text(REPLAY.format(trace=secret, data=tmp_path / "d"))
        sudo = {"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY)}
        p = run_cli("validate", plan, env=sudo)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert f"{secret}: you (uid {NOBODY}) cannot read it" in p.stderr
        assert "fio version" not in p.stderr
        secret.chmod(0o644)  # now nobody could read it too
        assert run_cli("validate", plan, env=sudo).returncode == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_root_reads_a_trace_only_beside_the_plan_or_readable_by_everyone(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (tmp_path / "d").mkdir()
    (tmp_path / "plans").mkdir()
    trace = _trace(private / "t.iolog")
    plan = tmp_path / "plans" / "p.toml"
    plan.write_text(REPLAY.format(trace=trace, data=tmp_path / "d"))
    env = {"SUDO_UID": "", "SUDO_GID": ""}
    p = run_cli("validate", plan, env=env)
    assert p.returncode == 2 and "not under the plan's directory and not readable by everyone" in p.stderr, p.stderr
    beside = _trace(tmp_path / "plans" / "t.iolog")
    beside.chmod(0o600)
    plan.write_text(REPLAY.format(trace=beside, data=tmp_path / "d"))
    assert run_cli("validate", plan, env=env).returncode == 0


def _swap_after_validate(attacker_dir, tmp_path, monkeypatch, swap):
    """The sudo user nobody validates a replay of their own trace, then ``swap(trace, secret)`` replaces it (as
    nobody) before the window writes the streams' iologs; returns what replay_files raised."""
    from conftest import NOBODY, as_nobody
    from protolab.engine.jobfile import Stream
    from protolab.engine.replay import replay_files
    from protolab.engine.targets import Access
    from protolab.plan.expand import expand
    from protolab.plan.load import load_plan

    secret = tmp_path / "secret.iolog"  # root's alone: offsets nobody must not learn
    secret.write_text("fio version 2 iolog\n/x add\n/x open\n/x read 737280 4096\n/x close\n")
    secret.chmod(0o600)
    trace = attacker_dir / "t.iolog"
    as_nobody("sh", "-c", f"printf 'fio version 2 iolog\\n/x add\\n/x open\\n/x read 0 4096\\n/x close\\n' > {trace}")
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    (tmp_path / "d").mkdir()
    plan = tmp_path / "p.toml"
    plan.write_text(REPLAY.format(trace=trace, data=tmp_path / "d"))
    (cell,) = expand(load_plan(plan))  # validate: nobody can read their own trace
    swap(trace, secret)
    folder = tmp_path / "raw"
    folder.mkdir()
    streams = [Stream(0, Access("file", "psync", filename="/x", size=1 << 20), 0, 1 << 20)]
    try:
        replay_files(cell, streams, folder, "w")
    except Exception as e:  # noqa: BLE001 (what the run would show)
        return e
    finally:
        assert not any("737280" in p.read_text() for p in folder.iterdir()), "the secret trace was replayed"


def test_a_trace_swapped_for_a_link_after_validate_is_refused_at_run_time(attacker_dir, tmp_path, monkeypatch):
    from conftest import as_nobody

    e = _swap_after_validate(attacker_dir, tmp_path, monkeypatch,
                             lambda trace, secret: as_nobody("ln", "-sfn", secret, trace))
    assert e is not None and "t.iolog: is a symlink" in str(e) and "737280" not in str(e)


def test_a_trace_swapped_for_a_file_the_user_cannot_read_is_refused_at_run_time(attacker_dir, tmp_path,
                                                                                 monkeypatch):
    import os

    from conftest import NOBODY, as_nobody

    if os.stat(attacker_dir).st_dev != os.stat(tmp_path).st_dev:
        pytest.skip("a hard link needs /var/tmp and the test's directory on one file system")
    link = attacker_dir / "hard"

    def swap(trace, secret):  # a hard link to root's file: a regular file, not a link, that nobody cannot read
        os.link(secret, link)  # made by root here: nobody cannot reach the test's directory (with
        as_nobody("mv", "-f", link, trace)  # fs.protected_hardlinks=0 they link any file they can reach)

    e = _swap_after_validate(attacker_dir, tmp_path, monkeypatch, swap)
    assert e is not None and f"you (uid {NOBODY}) cannot read it" in str(e)


def test_resume_checks_the_trace_again(tmp_path):
    import json
    import os
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="pl-trace-", dir="/var/tmp"))
    try:
        os.chmod(base, 0o755)
        trace = _trace(base / "t.iolog")
        trace.chmod(0o644)  # readable by everyone: root itself may replay it
        (tmp_path / "d").mkdir()
        plan = tmp_path / "p.toml"
        plan.write_text(REPLAY.format(trace=trace, data=tmp_path / "d"))
        env = {"SUDO_UID": "", "SUDO_GID": ""}
        p = run_cli("run", plan, "--results", tmp_path / "r", env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        (run,) = (tmp_path / "r").iterdir()
        m = json.loads((run / "manifest.json").read_text())
        m["status"] = "interrupted"
        (run / "manifest.json").write_text(json.dumps(m))
        (run / "records.jsonl").write_text("")
        other = _trace(base / "other.iolog")
        other.chmod(0o644)
        trace.unlink()
        trace.symlink_to(other)  # swapped since the run began
        p = run_cli("resume", run, env=env, timeout=300)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "t.iolog: is a symlink" in p.stderr and (run / "records.jsonl").read_text() == ""
    finally:
        shutil.rmtree(base, ignore_errors=True)
