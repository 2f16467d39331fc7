"""VMs as load hosts through the whole pipeline: a VM plan over iSCSI, NBD and NFS, and SIGTERM during a VM study."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from test_study import PREFIX, workdir  # noqa: F401  (fixture)
from test_vm_guest import guest_image

from conftest import leftovers
from protolab.analysis.derived import figures
from protolab.plan.load import load_plan_text
from protolab.results.rundir import RunDir
from protolab.run import Study

pytestmark = pytest.mark.lab


def vm_plan(configs: list[tuple[str, str, str]], duration: str = "2s", repeats: int = 1) -> str:
    body = "".join(f'[[configurations]]\nname = "{n}"\ntarget = "lab:{p}"\n' + (f'controller = "{c}"\n' if c else "")
                   for n, p, c in configs)  # no controller: a kernel path (the guest's kernel attaches it)
    return f"""
name = "vmstudy"
baseline = "{configs[0][0]}"
workloads = [{{ name = "tr3916-oltp", oio = 4 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "1G"
export_size = "128M"
[lab.link]
rate = "10GbE"
offloads = false
[hypervisor]
accel = "tcg"
disks_per_vm = 2
{body}
[[load_points]]
streams = 2
[method]
warmup = 0
duration = "{duration}"
repeats = {repeats}
"""


def qemus() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()
    return [ln for ln in out if "qemu-system" in ln and f"{PREFIX}-" in ln]


@pytest.fixture(autouse=True)
def _needs_qemu():
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86 (make deps)")
    guest_image()


def test_a_vm_plan_measures_every_protocol_with_hypervisor_cpu(workdir, tmp_path):
    text = vm_plan([("lsi-iscsi", "iscsi", "lsi"), ("vblk-nbd", "nbd", "virtio-blk"), ("pvscsi-nfs", "nfs", "pvscsi")])
    rundir = Study(load_plan_text(text), text, "vm", results_root=tmp_path / "r", lab_workdir=workdir).run()
    recs = rundir.records()
    assert sorted(r.configuration for r in recs) == ["lsi-iscsi", "pvscsi-nfs", "vblk-nbd"]
    for r in recs:
        f = figures(r)
        assert r.result.iops > 0 and r.result.errors == 0, r.cell_id
        assert r.host_names == ["h1-vm1"] and r.result.per_host_iops.get("h1-vm1", 0) > 0, r.result.per_host_iops
        assert f.cpu_us_per_io_hypervisor > 0 and f.cpu_us_per_io_hv_vcpu > 0 and f.cpu_us_per_io_hv_io > 0
        assert f.cpu_us_per_io_guest > 0
        # the VM's disk traffic crossed the lab's storage port: at least the 8 KiB of data per I/O
        assert f.packets_counted_as == "frames" and f.wire_bytes_per_io > 8192, (r.cell_id, f.wire_bytes_per_io)
    m = rundir.manifest()
    assert not workdir.exists(), "teardown leaves nothing in the lab's work directory (guests' logs included)"
    assert sorted(p.name for p in (rundir.path / "lab-logs").glob("*.console.log")) == [
        f"{PREFIX}-lsi-iscsi-h1-vm1.console.log", f"{PREFIX}-pvscsi-nfs-h1-vm1.console.log",
        f"{PREFIX}-vblk-nbd-h1-vm1.console.log"]
    assert m.testbed["kind"] == "vm" and m.testbed["hypervisor"]["accel"] == "tcg"
    assert len(m.agents) == 3 and all(a.startswith("guest ") for a in m.agents)
    assert qemus() == [] and leftovers(PREFIX) == []
    # the report names the guests' accelerator (the built-in tr3916-vm at quick scale: benchmarks/studies.py)
    from protolab.report.report_cli import write_report

    write_report(rundir, figures=False)
    md = (rundir.path / "report.md").read_text()
    assert "## Virtual machines as load hosts" in md and "Accelerator: **tcg**" in md


@pytest.mark.parametrize("config", [("lsi-iscsi", "iscsi", "lsi"), ("knfsd", "nfs", "")],
                         ids=["qemu-iscsi", "kernel-knfsd"])
def test_sigterm_during_a_vm_study_leaves_no_qemu(workdir, tmp_path, config):
    """QEMU's initiators, or a kernel path's server guest and load guest (knfsd: the pool's knfsd volume too,
    mounted here while prepared, then the server guest's disk): none survives the signal."""
    plan = tmp_path / "vm.toml"
    text = vm_plan([config], duration="20s", repeats=2)
    plan.write_text(text.replace('target = "lab:nfs"\n', 'target = "lab:nfs"\nserver = "knfsd"\n')
                    if config[0] == "knfsd" else text)
    results = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(results),
                          "--lab-workdir", str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "COLUMNS": "200"})
    try:
        end = time.monotonic() + 240
        while time.monotonic() < end and p.poll() is None:
            ms = list(results.glob("*/manifest.json"))
            if ms and json.loads(ms[0].read_text() or "{}").get("phase") == "measure" and qemus():
                break
            time.sleep(0.2)
        assert qemus(), "no guest was running"
        time.sleep(1)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143, err
    [run] = list(results.iterdir())
    assert RunDir.open(run).manifest().status == "interrupted"
    assert qemus() == [], "a QEMU survived the signal"
    assert leftovers(PREFIX) == []  # no namespace, mount, loop device or process of the run


