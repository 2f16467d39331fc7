"""Shared test helpers: run the real CLI, find the project's fio, write plans."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PLANS = DATA / "plans"
PROTOLAB = [sys.executable, "-m", "protolab.cli"]


def docs_text() -> str:
    """The README and every page of docs/ (what a user reads), one text: examples are checked wherever they live."""
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None):
    """Run `protolab ARGS` as a user would; returns the CompletedProcess (text). On timeout its whole process
    group is killed (nothing it started may outlive the test) and TimeoutExpired is raised."""
    import signal

    p = subprocess.Popen([*PROTOLAB, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "COLUMNS": "200", **(env or {})}, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def shared_plan(file: str, /, **values: str) -> str:
    """The text of tests/data/plans/FILE.toml with the first ``key = …`` line of each keyword set to its value
    (TOML text: ``duration='"1s"'``); top-level keys come first in these files, then the [method] ones."""
    text = (PLANS / f"{file}.toml").read_text()
    for key, value in values.items():
        text, n = re.subn(rf"^{re.escape(key)} = .*$", lambda _: f"{key} = {value}", text, count=1, flags=re.M)
        if n != 1:
            raise KeyError(f"tests/data/plans/{file}.toml has no line '{key} = …'")
    return text


@pytest.fixture
def cli():
    """The run_cli helper as a fixture."""
    return run_cli


@pytest.fixture
def fio_path() -> str:
    """The fio protolab uses (skips when none is installed)."""
    from protolab.engine.fio import find_fio

    path, _ = find_fio()
    if not path:
        pytest.skip("no fio: run 'make deps'")
    return path


def needs_root():
    """Skip unless running as root (lab tests)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (lab tests create namespaces, servers and loop devices)")


NOBODY = 65534


def as_nobody(*argv: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv`` as the unprivileged user nobody (an attacker's steps in the security tests)."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *map(str, argv)],
                          cwd=cwd, capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def attacker_dir():
    """A directory the user nobody owns and writes, in a fresh root-owned one (mode 755) under /var/tmp."""
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root: the attacker is another user")
    base = Path(tempfile.mkdtemp(prefix="pl-attack-", dir="/var/tmp"))
    base.chmod(0o755)
    mine = base / "evil"
    mine.mkdir()
    os.chown(mine, NOBODY, NOBODY)
    try:
        yield mine
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def setup(tmp_path):
    """A Study of the session tests' plan (tests/fakes.PLAN) on the fake testbed: ``setup(events, **fake fio
    options)``."""
    from fakes import PLAN, FakeFio, FakeTestbed
    from protolab.plan.load import load_plan_text
    from protolab.run import Study

    text = PLAN.format(dir=tmp_path)
    plan = load_plan_text(text)

    def make(events, **fio_kw):
        fio = FakeFio(events, **fio_kw)
        return Study(plan, text, "fake.toml", results_root=tmp_path / "r", fio=fio,
                     testbed=FakeTestbed(plan, fio, events))
    return make


@pytest.fixture(autouse=True)
def _session_marks_in_tmp(tmp_path_factory, monkeypatch):
    """Sessions run in a test's own process keep their marks (run.sessionmark) in the test session's directory, not
    in root's /run/protolab/sessions (a CLI started by a test keeps them there, as a user's run does)."""
    from protolab.run import sessionmark

    monkeypatch.setattr(sessionmark, "marks_root", lambda: tmp_path_factory.getbasetemp() / "session-marks")


@pytest.fixture(scope="session", autouse=True)
def _kvm_probe_cache_of_this_session():
    """doctor and VM studies keep the KVM probe's answer for the boot (/run/protolab/cache, vm.accel); the suite
    shares it between its tests and removes what it created — a cache that was there before is left alone."""
    from protolab.trust import PRIVATE_BASE

    cache = PRIVATE_BASE / "cache"
    had_dir, had_file = cache.is_dir(), (cache / "kvm-probe.json").exists()
    yield
    if not had_file:
        (cache / "kvm-probe.json").unlink(missing_ok=True)
    if not had_dir and cache.is_dir() and not any(cache.iterdir()):
        cache.rmdir()


@pytest.fixture
def smb_wire(monkeypatch):
    """analysis.wire with, beside SMB's own model ("smb"), Samba's slower one under a test's name ("smb-slow"): every
    READ or WRITE with an interim response first (a server slower than 500 µs, analysis.wire_smb.interim)."""
    from protolab.analysis import wire, wire_smb
    from protolab.plan.protocols import PROTOCOLS, Protocol

    # a server slower than Samba's interim-response time (a device model's): a test's name, not a protocol's
    monkeypatch.setitem(PROTOCOLS, "smb-slow", Protocol("smb-slow", "SMB3", tcp=True, wire_model="smb-slow"))
    monkeypatch.setitem(wire.MODELS, "smb-slow", wire._over_tcp(wire_smb.smb_bursts_slow))
    return wire
