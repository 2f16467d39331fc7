"""Teardown is complete: after down, after a failing up, after a failing test, after a crash, by prefix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PREFIX, leftovers, need_root_and_tools, settled_leftovers, sh, spec, workdir_for
from protolab.errors import ProtolabError, ToolError
from protolab.lab import Lab, down_all
from protolab.proc import SubprocessRunner

pytestmark = pytest.mark.lab
ALL = {"iscsi", "nfs", "nbd", "local"}
HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def test_down_removes_everything_and_is_safe_twice(make_lab):
    lab = make_lab(spec(hosts=2, nics_per_host=2, storage_ports=2), ALL)
    pids = tuple(lab.server_pids().values())
    assert len(pids) == 4 and leftovers(pids=pids)  # there is something to remove
    removed = lab.down()
    assert any(r.startswith(f"namespace {PREFIX}-st") for r in removed)
    assert any(r.startswith("loop device") for r in removed)
    assert settled_leftovers(pids=pids) == []
    assert not (lab.workdir / "lab.json").exists()
    assert lab.down() == []


class FailingRunner(SubprocessRunner):
    """The real runner, except that binding an iSCSI initiator fails (late in up())."""

    def run(self, argv, **kw):
        if "tgtadm" in argv[0] and "bind" in argv:
            raise ToolError("tgtadm: injected failure")
        return super().run(argv, **kw)


def test_failing_up_tears_down_what_it_made_then_reraises(tmp_path):
    need_root_and_tools()
    lab = Lab(spec(), ALL, workdir_for("failing-up"), FailingRunner())
    with pytest.raises(ToolError, match="injected failure"):
        lab.up()
    assert settled_leftovers() == []
    assert not (lab.workdir / "lab.json").exists()


def test_up_refuses_when_the_prefix_is_taken(make_lab):
    lab = make_lab(spec(), {"local"}, up=False)
    sh(["ip", "netns", "add", f"{PREFIX}-stray"], check=True)
    try:
        # no holder shows protolab made the stray: never told to sweep the prefix (tests/lab/test_prefix_clash.py
        # has the case where one does)
        with pytest.raises(ProtolabError, match=rf"\({PREFIX}-stray\).*set another lab.prefix") as e:
            lab.up()
        assert "lab down" not in str(e.value)
    finally:
        sh(["ip", "netns", "del", f"{PREFIX}-stray"])


INNER_TEST = """
import pytest
from conftest import spec

def test_fails_with_a_lab_up(make_lab):
    lab = make_lab(spec(hosts=2), {"iscsi", "nfs", "nbd", "local"})
    assert lab.server_pids()
    assert False, "deliberate failure"
"""


def test_a_failing_test_leaves_nothing_behind(tmp_path):
    need_root_and_tools()
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{SRC}", "PROTOLAB_TEST_LAB_PREFIX": PREFIX}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           str(tmp_path / "test_inner.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "deliberate failure" in done.stdout
    assert "left behind" not in done.stdout
    assert settled_leftovers() == []


CRASHING = """
import sys, time
from pathlib import Path
from protolab.lab import Lab
from protolab.plan.topology import LabSpec
lab = Lab(LabSpec(prefix=sys.argv[2], hosts=2, pool_size="1G", export_size="64M"),
          {"iscsi", "nfs", "nbd", "local"}, Path(sys.argv[1]))
lab.up()
print(" ".join(map(str, lab.server_pids().values())), flush=True)
time.sleep(120)
"""


def test_after_a_crash_the_record_removes_everything(tmp_path):
    need_root_and_tools()
    workdir = workdir_for("crash")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", CRASHING, str(workdir), PREFIX], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        pids = tuple(int(p) for p in line.split())
        assert len(pids) == 4, proc.stderr.read() if proc.poll() is not None else line
    finally:
        proc.send_signal(signal.SIGKILL)  # the crash: no teardown code runs
        proc.wait(timeout=10)
    assert leftovers(pids=pids)  # the servers outlive the crashed process
    removed = Lab.from_record(workdir).down()
    assert any("tgtd" in r for r in removed) and any("nbdkit" in r for r in removed)
    assert settled_leftovers(pids=pids) == []


def test_down_all_removes_anything_with_the_prefix_and_nothing_else(tmp_path):
    need_root_and_tools()
    image = tmp_path / f"{PREFIX}-pool.img"
    image.write_bytes(b"")
    os.truncate(image, 64 * 1024 * 1024)
    dev = sh(["losetup", "--find", "--show", str(image)], check=True).stdout.decode().strip()
    sh(["ip", "netns", "add", f"{PREFIX}-stray"], check=True)
    sh(["ip", "netns", "add", f"{PREFIX}keep-x"], check=True)
    try:
        removed = down_all(PREFIX)
        assert f"namespace {PREFIX}-stray" in removed
        assert any(dev in r for r in removed)
        assert settled_leftovers() == []
        assert f"{PREFIX}keep-x" in sh(["ip", "netns", "list"]).stdout.decode()
    finally:
        sh(["ip", "netns", "del", f"{PREFIX}keep-x"])
        sh(["losetup", "--detach", dev])


def test_teardown_is_complete_while_later_namespaces_hold_copies_of_our_mounts(make_lab):
    """Another lab's servers, started while our pool is mounted, must not pin our loop device."""
    lab = make_lab(spec(), {"local", "nfs"})
    sh(["ip", "netns", "add", f"{PREFIX}keep-o"], check=True)
    others = [subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}keep-o", *argv, "sleep", "60"])
              for argv in ([], ["unshare", "--mount", "--propagation", "slave"])]
    try:
        time.sleep(0.3)
        lab.down()
        assert settled_leftovers() == []
    finally:
        for p in others:
            p.kill()
            p.wait(timeout=10)
        sh(["ip", "netns", "del", f"{PREFIX}keep-o"])
