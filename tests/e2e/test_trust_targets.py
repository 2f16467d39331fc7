"""Targets on the load hosts are never checked or created on this machine, and need allow_overwrite."""

from __future__ import annotations

from pathlib import Path

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
