"""Shared fixtures of the lab tests: a test prefix, a lab factory that always tears down, leftover checks.

Every lab here uses the prefix ``plt`` plus three digits of this session (a user's lab
uses ``pl``; two test sessions running at once must not sweep each other's labs) and a
workdir /var/tmp/protolab-labtest/<prefix>-…, so what the tests leave behind can be
told apart and removed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protolab.lab import Lab, down_all
from protolab.plan.topology import LabSpec

# Test modules do `from conftest import …`; without packages, that name resolves to the
# conftest loaded last, which may be this one. So this module also offers the root
# conftest's helpers (not its fixtures, which pytest already provides).
_root_spec = importlib.util.spec_from_file_location("_protolab_root_conftest", Path(__file__).parents[1] / "conftest.py")
_root = importlib.util.module_from_spec(_root_spec)
_root_spec.loader.exec_module(_root)  # type: ignore[union-attr]
for _name, _value in vars(_root).items():
    if not _name.startswith("_") and _name not in globals() and not hasattr(_value, "_fixture_function_marker") \
            and type(_value).__name__ != "FixtureFunctionDefinition" and not hasattr(_value, "_pytestfixturefunction"):
        globals()[_name] = _value

PREFIX = os.environ.get("PROTOLAB_TEST_LAB_PREFIX") or f"plt{os.getpid() % 1000:03d}"
LABTEST_ROOT = Path("/var/tmp/protolab-labtest")
TOOLS = ["ip", "tc", "ethtool", "losetup", "mkfs.btrfs", "tgtd", "tgtadm", "ganesha.nfsd", "rpcbind",
         "rpcinfo", "nbdkit", "nbdinfo", "nbdcopy", "iscsi-inq", "nfs-ls", "nfs-cat", "unshare", "ss"]
FIO = Path(os.environ.get("PROTOLAB_FIO") or Path(__file__).resolve().parents[2] / ".deps/fio/bin/fio")


def sh(argv: list[str], netns: str | None = None, timeout: float = 30, check: bool = False,
       input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run a command (in ``netns``) with a timeout; nothing in the lab tests may hang."""
    full = ["ip", "netns", "exec", netns, *argv] if netns else argv
    try:
        return subprocess.run(full, capture_output=True, timeout=timeout, check=check, input=input)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(full, 124, e.stdout or b"", e.stderr or b"")


def leftovers(prefix: str = PREFIX, pids: tuple[int, ...] = ()) -> list[str]:
    """Everything of a lab with ``prefix`` that still exists: namespaces, links, mounts, loops, servers."""
    found: list[str] = []
    ns = sh(["ip", "netns", "list"]).stdout.decode().split("\n")
    found += [f"namespace {n.split()[0]}" for n in ns if n.startswith(f"{prefix}-")]
    links = sh(["ip", "-o", "link", "show"]).stdout.decode().splitlines()
    found += [f"interface {ln.split(':')[1].strip()}" for ln in links
              if ln.split(":")[1].strip().split("@")[0].startswith(prefix)]
    for line in Path("/proc/mounts").read_text().splitlines():
        mnt = line.split()[1]
        if Path(mnt).name.startswith((f"{prefix}-pool", f"{prefix}-mnt", f"{prefix}-dev")):  # -dev: FUSE
            found.append(f"mount {mnt}")
    loops = json.loads(sh(["losetup", "--list", "--json"]).stdout or b'{"loopdevices": []}')
    for dev in loops.get("loopdevices", []):
        if Path((dev.get("back-file") or "").removesuffix(" (deleted)")).name in (f"{prefix}-pool.img",
                                                                                   f"{prefix}-disk"):
            found.append(f"loop device {dev['name']}")
    from protolab.telemetry.cgroups import leftover_groups  # the lab's role cgroups (CPU per role)
    # exact name, or the name's run-… groups would match other prefixes that extend this one
    found += [f"cgroup {g}" for g in leftover_groups(prefix) if g.name == f"protolab-{prefix}"]
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            state = (pid_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state == "Z":  # a zombie holds nothing; in containers PID 1 may not reap
            continue
        if int(pid_dir.name) in pids or (f"{LABTEST_ROOT}/{prefix}-" in cmd and "pytest" not in cmd):
            found.append(f"process {pid_dir.name} ({cmd.strip()[:60]})")
    return found


def settled_leftovers(prefix: str = PREFIX, pids: tuple[int, ...] = (), wait: float = 10.0) -> list[str]:
    """Leftovers that are still there after ``wait`` s: exiting servers and loop devices
    released lazily (autoclear) get a moment; anything that stays is a leak."""
    deadline = time.monotonic() + wait
    while (found := leftovers(prefix, pids)) and time.monotonic() < deadline:
        time.sleep(0.25)
    return found


def family_prefix(letter: str) -> str:
    """The lab prefix of one family of tests (one test module): PROTOLAB_TEST_LAB_PREFIX's first five
    characters and ``letter`` when it is set, so parallel sessions never share one; 'pl' + letter otherwise, with
    the pytest-xdist worker's number between when the lab tests run on several workers (`make test`: a module's tests
    may run on both at once, test_study's labs would otherwise clash)."""
    base = os.environ.get("PROTOLAB_TEST_LAB_PREFIX")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    return (base[:5] + letter) if base else f"pl{worker[-1:]}{letter}"


def lab_workdir(prefix: str, name: str):
    """The body of every lab test's ``workdir`` fixture: a fresh work directory named after the prefix and the
    test, and after the test (failed or not) a check that the lab left nothing of that prefix behind — what it
    left is removed and the test fails. Only this prefix is ever swept."""
    need_root_and_tools()
    w = LABTEST_ROOT / f"{prefix}-{name}"
    shutil.rmtree(w, ignore_errors=True)
    try:
        yield w
    finally:
        left = leftovers(prefix)
        if left:
            down_all(prefix, workdirs=[w])
            pytest.fail(f"the lab left behind: {', '.join(left)}")
        shutil.rmtree(w, ignore_errors=True)


def run_plan(text: str, workdir: Path, tmp_path: Path, name: str = "plan") -> Path:
    """``protolab run`` of a plan's text as a user runs it (its own process, the lab at ``workdir``); the one run
    directory it wrote under ``tmp_path/r`` (beside those of earlier calls), after asserting it exited 0."""
    plan = tmp_path / f"{name}.toml"
    plan.write_text(text)
    results = tmp_path / "r"
    before = set(results.iterdir()) if results.is_dir() else set()
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(results),
                        "--lab-workdir", str(workdir)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    [run] = [d for d in results.iterdir() if d not in before and d.is_dir()]
    return run


def workdir_for(name: str) -> Path:
    """A lab workdir of this session (its name carries the test prefix)."""
    return LABTEST_ROOT / f"{PREFIX}-{name}"


def need_root_and_tools() -> None:
    """Skip unless root with every program the lab needs."""
    if os.geteuid() != 0:
        pytest.skip("lab tests need root (network namespaces, loop devices, btrfs)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"lab tests need {', '.join(missing)}; run 'make deps'")


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers_in_session():
    """Before and after the session: nothing with the test prefix; anything found is removed, then reported."""
    if os.geteuid() != 0:
        yield
        return
    mine = lambda: list(LABTEST_ROOT.glob(f"{PREFIX}-*"))  # noqa: E731
    if leftovers():
        down_all(PREFIX, workdirs=mine())
    yield
    after = settled_leftovers()
    if after:
        down_all(PREFIX, workdirs=mine())
        pytest.fail(f"the lab tests left behind: {', '.join(after)}")
    for wd in mine():  # only logs remain in them now
        shutil.rmtree(wd, ignore_errors=True)


def spec(**kw) -> LabSpec:
    """A small test lab: prefix plt, small pool and exports."""
    base = dict(prefix=PREFIX, pool_size="1G", export_size="64M")
    base.update(kw)
    return LabSpec.model_validate(base)


@pytest.fixture
def make_lab(request):
    """Build labs that are always torn down, and checked for leftovers, whatever the test does."""
    need_root_and_tools()
    labs: list[Lab] = []
    pids: set[int] = set()

    def make(lab_spec: LabSpec, protocols: set[str], up: bool = True, knfsd: bool = False) -> Lab:
        workdir = workdir_for(f"{request.node.name[:40]}-{len(labs)}")
        shutil.rmtree(workdir, ignore_errors=True)
        lab = Lab(lab_spec, protocols, workdir, knfsd=knfsd)
        labs.append(lab)
        if up:
            lab.up()
            pids.update(lab.server_pids().values())
        return lab

    try:
        yield make
    finally:
        for lab in labs:
            pids.update(lab.server_pids().values())
            lab.down()
        left = settled_leftovers(pids=tuple(pids))
        if left:
            down_all(PREFIX, workdirs=[lab.workdir for lab in labs])
            pytest.fail(f"lab teardown left behind: {', '.join(left)}")
        for lab in labs:
            shutil.rmtree(lab.workdir, ignore_errors=True)


# The lab tests that assert on no timing, rate or ratio a busy machine would move (they check what was made, run,
# recorded, refused and torn down; counts of frames and bytes): `make test` runs them on two pytest-xdist workers
# beside the unit and end-to-end tests, each worker one test at a time, whichever is free taking the next (so two
# guests' tests may run at once). Every other lab test measures, and runs alone afterwards. A new lab test that
# measures nothing belongs here.
BESIDE = (
    "test_attach_hosts", "test_vm_study", "test_kernel_nvme", "test_cifs_guest", "test_smb_study", "test_vm_guest",
    "test_resume", "test_study", "test_killed_resume", "test_servers_loopback", "test_verify_lab", "test_fill_lab",
    "test_nfs_direct", "test_overwrite_block", "test_replay_lab", "test_lab_access", "test_lab_teardown",
    "test_lab_trust", "test_lab_pool", "test_prefix_clash", "test_net_counters", "test_samba_lab", "test_lab_cli",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in BESIDE:
            item.add_marker(pytest.mark.lab_beside)
