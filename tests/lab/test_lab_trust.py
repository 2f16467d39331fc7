"""A local user cannot turn the lab's own files against it: planted holders, records, symlinks and work
directories change nothing outside protolab's paths (issue: root without a foothold)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import NOBODY, PREFIX, as_nobody, need_root_and_tools, run_cli, settled_leftovers, spec, workdir_for
from protolab.errors import ProtolabError
from protolab.lab import Lab, holder
from protolab.lab.record import Record
from protolab.trust import UnsafePath

pytestmark = pytest.mark.lab


@pytest.fixture
def victim():
    """A directory with a file in it that protolab must never touch (root-only, outside every lab path)."""
    d = Path(tempfile.mkdtemp(prefix="pl-victim-"))
    (d / "precious").write_text("keep me\n")
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def _intact(victim: Path) -> None:
    assert (victim / "precious").read_text() == "keep me\n"


def test_the_old_world_writable_lab_root_is_never_read(victim, make_lab):
    """nobody plants a holder and a record under /var/tmp/protolab-lab (the old root) naming a victim: a lab with
    that prefix comes up and goes down, and the victim is intact."""
    need_root_and_tools()
    old = Path("/var/tmp/protolab-lab")
    if old.exists() and old.stat().st_uid != NOBODY:
        pytest.skip("/var/tmp/protolab-lab exists and is not ours to plant in")
    try:
        as_nobody("mkdir", "-p", old / "holders", old / PREFIX)
        as_nobody("sh", "-c", f"echo '{json.dumps({'prefix': PREFIX, 'pid': 1, 'started': 1, 'uid': 0, 'workdir': str(old / PREFIX), 'kind': 'run'})}' > {old}/holders/{PREFIX}.json")
        rec = {"schema": 1, "spec": {"prefix": PREFIX}, "protocols": [], "state": {},
               "resources": [{"kind": "dir", "name": str(victim), "extra": {}}]}
        as_nobody("sh", "-c", f"echo '{json.dumps(rec)}' > {old}/{PREFIX}/lab.json")
        lab = make_lab(spec(), {"nbd"})
        assert str(lab.workdir).startswith("/var/tmp/protolab-labtest/")
        lab.down()
        _intact(victim)
        assert (old / PREFIX / "lab.json").exists()  # not ours: not read, not removed
    finally:
        subprocess.run(["rm", "-rf", str(old)], check=False)


def test_a_holder_root_does_not_own_is_refused_and_not_swept(victim, tmp_path):
    """A holder file that is not root's (chowned to nobody) stops the lab in one line; nothing is swept."""
    need_root_and_tools()
    root = tmp_path / "holders"
    root.mkdir(mode=0o700)
    path = holder.path_of(PREFIX, root)
    path.write_text(json.dumps({"prefix": PREFIX, "pid": 1, "started": 1, "uid": 0, "workdir": str(victim),
                                "kind": "lab-up"}))
    os.chown(path, NOBODY, NOBODY)
    swept = []
    with pytest.raises(UnsafePath, match="lab holder .* can be changed by a user other than root"):
        holder.acquire(PREFIX, tmp_path / "wd", "run", swept.append, root=root)
    assert swept == [] and path.exists()
    _intact(victim)


@pytest.mark.parametrize("resource", [
    {"kind": "dir", "name": "VICTIM", "extra": {}},
    {"kind": "file", "name": "VICTIM/precious", "extra": {}},
    {"kind": "file", "name": "WORKDIR/../precious", "extra": {}},
    {"kind": "mount", "name": "/", "extra": {}},
    {"kind": "netns", "name": "someone-elses", "extra": {}},
    {"kind": "cgroup", "name": "/sys/fs/cgroup/cpuacct/system.slice", "extra": {}},
    {"kind": "sandwich", "name": "x", "extra": {}},
])
def test_a_record_naming_what_the_lab_did_not_make_is_refused(victim, resource):
    need_root_and_tools()
    wd = workdir_for("forged-record")
    wd.mkdir(parents=True, mode=0o700, exist_ok=True)
    try:
        resource = {**resource, "name": resource["name"].replace("VICTIM", str(victim)).replace("WORKDIR", str(wd))}
        (wd / "lab.json").write_text(json.dumps({
            "schema": 1, "spec": spec().model_dump(mode="json"), "protocols": ["nbd"], "state": {"up": True},
            "resources": [resource]}))
        with pytest.raises(ProtolabError, match="is not one this lab .* could have made; nothing was removed"):
            Lab.from_record(wd)
        p = run_cli("lab", "down", "--prefix", PREFIX, "--workdir", wd)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "could have made; nothing was removed" in p.stderr
        _intact(victim)
    finally:
        subprocess.run(["rm", "-rf", str(wd)], check=False)


def test_a_process_is_adopted_from_its_pidfile_only_when_it_runs_that_program(tmp_path):
    from protolab.errors import ToolError
    from protolab.lab.procs import Processes
    from protolab.proc import SubprocessRunner

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        rec = Record.create(tmp_path, {}, [])
        procs = Processes(SubprocessRunner(), rec, tmp_path / "logs")
        with pytest.raises(ToolError, match=f"pidfile names pid {sleeper.pid}, which runs sleep"):
            procs.adopt("nbdkit", sleeper.pid, "pl-x")
        assert rec.find("process") == [] and sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_symlinks_planted_in_a_work_directory_are_never_followed(victim, tmp_path):
    """The pool image, ganesha.conf and a server log planted as symlinks to the victim: the lab refuses or fails
    to start, tears down, and the victim is unchanged."""
    need_root_and_tools()
    for planted in (f"{PREFIX}-pool.img", "logs/nbdkit-parent.log"):
        wd = workdir_for("planted-link")
        subprocess.run(["rm", "-rf", str(wd)], check=False)
        (wd / "logs").mkdir(parents=True, mode=0o700)
        os.chmod(wd, 0o700)
        (wd / planted).symlink_to(victim / "precious")
        lab = Lab(spec(), {"nbd"}, wd)
        with pytest.raises(ProtolabError, match="is a symlink|exists already"):
            lab.up()
        lab.down()
        _intact(victim)
        assert settled_leftovers() == []
        subprocess.run(["rm", "-rf", str(wd)], check=False)


def test_a_work_directory_another_user_could_change_is_refused_in_one_line(attacker_dir, tmp_path):
    need_root_and_tools()
    plan = tmp_path / "p.toml"
    plan.write_text(f"""
name = "p"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "{PREFIX}"
pool_size = "1G"
export_size = "64M"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "1s"
duration = "1s"
repeats = 1
""")
    link = tmp_path / "linked-workdir"
    link.symlink_to(tmp_path / "real")
    (tmp_path / "real").mkdir(mode=0o700)
    for wd, why in ((attacker_dir, "is owned by uid 65534, not root"),
                    (attacker_dir / "lab", "is owned by uid 65534, not root: another user could swap"),
                    (link, "is a symlink")):
        for args in (("lab", "up", plan, "--workdir", wd), ("run", plan, "--lab-workdir", wd, "--results",
                                                             tmp_path / "r"), ("validate", plan, "--lab-workdir", wd)):
            p = run_cli(*args, timeout=120)
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
            assert why in p.stderr, (args, p.stderr)
    assert not (tmp_path / "r").exists() and not (attacker_dir / "lab").exists()
    assert settled_leftovers() == []
