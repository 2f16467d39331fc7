"""Measurements that hold: multi-host runs from a relative results directory, an exact emulated 1GbE."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import family_prefix, lab_workdir
from protolab.analysis.wire import ceiling
from protolab.plan.load import load_plan_text
from protolab.results.rundir import RunDir
from protolab.run import Study

pytestmark = pytest.mark.lab
# its own prefix (PROTOLAB_TEST_LAB_PREFIX + "m" when set, so parallel sessions never share one)
PREFIX = family_prefix("m")


@pytest.fixture
def workdir(request):
    yield from lab_workdir(PREFIX, request.node.name[:30])


def _plan(configs: list[tuple[str, str]], *, lab: str, workload: str, load: str, method: str) -> str:
    text = f'name = "m"\nbaseline = "{configs[0][0]}"\nworkloads = ["{workload}"]\n'
    text += "".join(f'[[configurations]]\nname = "{n}"\ntarget = "{t}"\n' for n, t in configs)
    return text + f'[lab]\nprefix = "{PREFIX}"\npool_size = "1G"\nexport_size = "128M"\n{lab}\n' \
                  f'[[load_points]]\n{load}\n[method]\n{method}\n'


def test_two_hosts_from_a_relative_results_directory(workdir, tmp_path, monkeypatch):
    """fio's client runs in the agents' directory: every path it gets must be absolute."""
    text = _plan([("iscsi", "lab:iscsi"), ("nfs", "lab:nfs"), ("nbd", "lab:nbd")], lab="hosts = 2",
                 workload="tr3808-4k", load="hosts = 2\nstreams = 1\noio = 2",
                 method='warmup = "1s"\nduration = "2s"\nrepeats = 1\ndata_size = "64M"')
    monkeypatch.chdir(tmp_path)
    rundir = Study(load_plan_text(text), text, "test", results_root=Path("results"), lab_workdir=workdir).run()
    assert rundir.path.is_absolute() and rundir.path.parent == tmp_path / "results"
    recs = rundir.records()
    assert sorted(r.configuration for r in recs) == ["iscsi", "nbd", "nfs"]
    for r in recs:
        assert r.result.iops > 0 and r.result.errors == 0, r.cell_id
        assert sorted(r.result.per_host_iops) == ["h1", "h2"] and min(r.result.per_host_iops.values()) > 0


def test_emulated_1gbe_carries_what_a_1gbe_wire_carries(workdir, tmp_path):
    """64 KiB sequential reads land at 0.97–1.00 of the wire model's ceiling (not 1.6 % above it), with the link's
    offloads on and off: four configurations of one lab (a configuration's link is its own), interleaved."""
    text = _plan([("nbd", "lab:nbd"), ("iscsi", "lab:iscsi"), ("nbd-off", "lab:nbd"), ("iscsi-off", "lab:iscsi")],
                 lab='[lab.link]\nrate = "1GbE"\nmtu = 1500\noffloads = true',
                 workload="seq-read-64k", load="streams = 1\noio = 8",
                 method='warmup = "2s"\nduration = "4s"\nrepeats = 1\ndata_size = "64M"')
    for name in ("nbd-off", "iscsi-off"):
        text = text.replace(f'name = "{name}"\ntarget = "lab:{name[:-4]}"\n',
                            f'name = "{name}"\ntarget = "lab:{name[:-4]}"\nlink = {{ offloads = false }}\n')
    rundir = Study(load_plan_text(text), text, "test", results_root=tmp_path / "r", lab_workdir=workdir).run()
    recs = rundir.records()
    assert sorted(r.configuration for r in recs) == ["iscsi", "iscsi-off", "nbd", "nbd-off"]
    for r in recs:
        protocol, offloads = r.configuration.removesuffix("-off"), not r.configuration.endswith("-off")
        assert set(r.telemetry.offloads.values()) == {offloads}, (r.configuration, r.telemetry.offloads)
        model = ceiling(protocol, link_bps="1GbE", mtu=1500, block_size=65536, read_pct=100)
        ratio = r.result.mbps / model.mbps
        print(f"{protocol} offloads={offloads}: {r.result.mbps:.1f} MB/s = {ratio:.4f} of {model.mbps:.1f}")
        # 0.97-1.00 at two decimals (the 1 ms burst lets the first millisecond through unshaped). Without
        # offloads every frame costs the servers CPU of its own: on a busy 2-core machine they can fall a
        # little short of the wire, never above it, so that case keeps the upper bound and a lower floor.
        floor = 0.97 if offloads else 0.95
        assert floor <= ratio < 1.005, (r.configuration, r.result.mbps, model.mbps)


def test_a_second_run_on_a_held_prefix_is_refused_and_the_first_completes(workdir, tmp_path):
    """One lab per prefix: the second run names the holder's PID and touches nothing of its lab."""
    import json
    import subprocess
    import sys
    import time

    from protolab.lab import holder

    text = _plan([("nbd", "lab:nbd"), ("iscsi", "lab:iscsi")], lab="", workload="tr3808-4k",
                 load="streams = 1\noio = 2", method='warmup = "1s"\nduration = "2s"\nrepeats = 2\ndata_size = "64M"')
    plan = tmp_path / "p.toml"
    plan.write_text(text)
    cmd = [sys.executable, "-m", "protolab.cli", "run", str(plan)]
    first = subprocess.Popen([*cmd, "--results", str(tmp_path / "r1"), "--lab-workdir", str(workdir)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # a holder left by a killed run (its pid dead) is not the first run's: wait for the first run's own
        while getattr(holder.read(PREFIX), "pid", None) != first.pid and time.monotonic() < deadline \
                and first.poll() is None:
            time.sleep(0.2)
        held = holder.read(PREFIX)
        assert held is not None and held.pid == first.pid, "the first run must hold the prefix while it runs"
        other = workdir.parent / f"{workdir.name}-second"
        second = subprocess.run([*cmd, "--results", str(tmp_path / "r2"), "--lab-workdir", str(other)],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"lab prefix '{PREFIX}' is held by protolab run with PID {first.pid}" in lines[0]
        assert not other.exists(), "the refused run must create nothing of a lab"
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    [rundir] = list((tmp_path / "r1").iterdir())
    manifest = json.loads((rundir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["cells_done"] == 4
    assert all(r.result.iops > 0 for r in RunDir.open(rundir).records())
    assert holder.read(PREFIX) is None, "the holder is released at teardown"
    assert not workdir.exists(), "the lab's workdir is cleaned at teardown"
    assert sorted(p.name for p in (rundir / "lab-logs").iterdir()) >= ["nbdkit-parent.log", "tgtd.log"]
