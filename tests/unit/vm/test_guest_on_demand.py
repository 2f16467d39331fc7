"""The guest image is built the first time a study needs a guest (`make demo` leaves it out): the project's own
scripts decide and build, checked as root's programs are, with one progress line; the operator's image is never
built."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from protolab import trust
from protolab.errors import ToolError
from protolab.proc import Completed, FakeRunner
from protolab.trust import UnsafePath
from protolab.vm import image


def _project(tmp_path: Path, monkeypatch) -> Path:
    """A project tree in tmp_path (scripts/, .deps/) that protolab takes for its own installation."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("build-guest.sh", "install-deps.sh"):
        (scripts / name).write_text("#!/bin/sh\nexit 0\n")
        (scripts / name).chmod(0o755)
    monkeypatch.setattr(trust, "project_deps", lambda: tmp_path / ".deps")
    monkeypatch.delenv("PROTOLAB_GUEST", raising=False)
    return tmp_path


def _build(guest: Path):
    """What install-deps.sh guest leaves: the image's three files."""
    def run(argv):
        guest.mkdir(parents=True, exist_ok=True)
        for name in (image.KERNEL, image.INITRD):
            (guest / name).write_bytes(b"x")
        (guest / image.INFO).write_text(json.dumps({"kernel": "6.1.0-test-amd64"}))
        return Completed(tuple(argv), 0, "build-guest: built", "")
    return run


def test_a_missing_image_is_built_once_with_one_progress_line(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    guest = root / ".deps" / "guest"
    check, install = str(root / "scripts/build-guest.sh"), str(root / "scripts/install-deps.sh")
    runner = FakeRunner({(check, "--check"): Completed((), 3, "build-guest: missing", ""), (install,): _build(guest)})
    notes: list[str] = []
    got = image.ensure_image(runner, notes.append)
    assert got.dir == guest and got.info == {"kernel": "6.1.0-test-amd64"}
    assert [c[0] for c in runner.calls] == [(check, "--check", str(guest)), (install, "guest")]
    assert len(notes) == 1 and notes[0].startswith(f"guest image: building it in {guest}") and "guest" in notes[0]


def test_an_image_up_to_date_is_not_built(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    _build(root / ".deps" / "guest")(["prepared"])
    check = str(root / "scripts/build-guest.sh")
    runner = FakeRunner()  # --check answers 0: up to date
    notes: list[str] = []
    assert image.ensure_image(runner, notes.append).dir == root / ".deps" / "guest"
    assert [c[0] for c in runner.calls] == [(check, "--check", str(root / ".deps" / "guest"))] and notes == []


def test_a_failed_build_is_one_line_naming_the_command(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    install = str(root / "scripts/install-deps.sh")
    runner = FakeRunner({(str(root / "scripts/build-guest.sh"), "--check"): Completed((), 3, "", ""),
                         (install,): Completed((), 1, "", "build-guest: no Debian kernel in /boot\n")})
    with pytest.raises(ToolError) as e:
        image.ensure_image(runner, lambda _: None)
    assert str(e.value) == (f"building the guest image failed: build-guest: no Debian kernel in /boot; run "
                            f"'{install} guest' to see its whole output")


def test_a_script_another_user_can_change_is_never_run(tmp_path, monkeypatch):
    root = _project(tmp_path, monkeypatch)
    (root / "scripts/install-deps.sh").chmod(0o777)
    runner = FakeRunner({(str(root / "scripts/build-guest.sh"), "--check"): Completed((), 3, "", "")})
    with pytest.raises(UnsafePath, match="install-deps.sh can be changed by a user other than root"):
        image.ensure_image(runner, lambda _: None)
    assert [c[0][1:] for c in runner.calls] == [("--check", str(root / ".deps" / "guest"))]  # the check only
    (root / "scripts/build-guest.sh").chmod(0o777)
    runner = FakeRunner()
    with pytest.raises(UnsafePath, match="build-guest.sh can be changed"):
        image.ensure_image(runner, lambda _: None)
    assert runner.calls == []


def test_the_operator_s_image_is_used_as_it_is(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    mine = tmp_path / "mine"
    monkeypatch.setenv("PROTOLAB_GUEST", str(mine))
    runner = FakeRunner()
    with pytest.raises(image.ProtolabError, match=f"no guest image in {mine}"):
        image.ensure_image(runner, lambda _: None)
    _build(mine)(["prepared"])
    assert image.ensure_image(runner, lambda _: None).dir == mine and runner.calls == []


def test_build_guest_check_says_missing_and_builds_nothing(tmp_path):
    out = tmp_path / "guest"
    done = subprocess.run([str(ROOT / "scripts/build-guest.sh"), "--check", str(out)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PROTOLAB_GUEST_FIO": str(tmp_path / "no-fio")})
    assert done.returncode == 3 and "missing or older than its inputs" in done.stdout, done.stderr
    assert not out.exists()


def test_install_deps_refuses_an_unknown_mode_in_one_line():
    if os.geteuid() != 0:
        pytest.skip("install-deps.sh checks for root first")
    done = subprocess.run(["bash", str(ROOT / "scripts/install-deps.sh"), "vm"], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "install-deps: unknown mode 'vm'; give test, demo, guest or nothing\n"
