"""A lab whose prefix clashes with namespaces it did not make says so and never suggests sweeping the prefix
(`lab down --all --prefix cni` would remove every Kubernetes `cni-*` namespace); it suggests the sweep only when a
holder in /run/protolab shows protolab made the prefix."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import family_prefix, need_root_and_tools, run_cli
from protolab.errors import ProtolabError
from protolab.lab import Lab, holder
from protolab.plan.topology import LabSpec
from protolab.proc import Completed, FakeRunner

PREFIX = family_prefix("k")


@pytest.fixture
def foreign_namespace():
    """A namespace carrying the prefix that another program made (as a CNI plugin makes cni-…)."""
    need_root_and_tools()
    name = f"{PREFIX}-pod1"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def test_a_clash_with_namespaces_protolab_did_not_make_suggests_no_sweep(foreign_namespace, tmp_path):
    assert not holder.path_of(PREFIX).exists()  # no protolab lab ever held this prefix
    with pytest.raises(ProtolabError) as e:
        Lab(LabSpec(prefix=PREFIX), {"nbd"}, tmp_path / "w").up()
    msg = str(e.value)
    assert f"exist already ({foreign_namespace})" in msg and "set another lab.prefix" in msg, msg
    assert "--all" not in msg and "lab down" not in msg, msg
    assert not holder.path_of(PREFIX).exists() and not (tmp_path / "w").exists()  # nothing taken, nothing made
    p = run_cli("lab", "down", "--prefix", PREFIX, "--workdir", tmp_path / "w")
    assert p.returncode == 0 and "nothing to remove" in p.stdout and "--all" not in p.stdout, p
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count(foreign_namespace)


def test_a_clash_left_by_a_protolab_lab_suggests_the_sweep(tmp_path):
    need_root_and_tools()
    stale = holder.path_of(PREFIX)  # a run that was killed: its holder names a process that is gone
    holder.HOLDERS.mkdir(parents=True, exist_ok=True)
    stale.write_text(json.dumps({"prefix": PREFIX, "pid": 2**22 + 1, "started": 1, "uid": 0,
                                 "workdir": str(tmp_path / "old"), "kind": "run"}))
    stale.chmod(0o600)
    # the sweep of the gone holder's prefix could not remove this one (the fake runner removes nothing)
    runner = FakeRunner({("ip", "netns", "list"): Completed((), 0, f"{PREFIX}-st (id: 1)\n", "")})
    try:
        with pytest.raises(ProtolabError, match=rf"left by a protolab lab; run 'protolab lab down --all --prefix "
                                                rf"{PREFIX}'"):
            Lab(LabSpec(prefix=PREFIX), {"nbd"}, tmp_path / "w", runner).up()
        assert ("ip", "netns", "del", f"{PREFIX}-st") in [c for c, _ in runner.calls]  # it was swept first
    finally:
        stale.unlink(missing_ok=True)
