"""A captured trace replayed over the embedded lab's NBD and NFS exports, I/O for I/O (root, real servers)."""

from __future__ import annotations

import pytest

from conftest import DATA, PREFIX, lab_workdir
from protolab.plan.load import load_plan_text
from protolab.run import Study

pytestmark = pytest.mark.lab

TEXT = f"""
name = "labreplay"
baseline = "nbd"
workloads = [{{ name = "t", replay = "{DATA / 'replay-small.iolog'}", oio = 1 }}]
load_points = [{{ streams = 2 }}]
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "nfs"
target = "lab:nfs"
[method]
warmup = 0
duration = "10s"
repeats = 1
[lab]
prefix = "{PREFIX}"
hosts = 1
nics_per_host = 1
storage_ports = 1
pool_size = "1G"
export_size = "128M"
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "replay")


def test_the_trace_is_replayed_over_nbd_and_nfs(workdir, tmp_path):
    rundir = Study(load_plan_text(TEXT), TEXT, "test", results_root=tmp_path / "r", lab_workdir=workdir).run()
    recs = {r.configuration: r.result for r in rundir.records()}
    assert set(recs) == {"nbd", "nfs"}
    for result in recs.values():  # two streams, each the whole trace (98 reads, 52 writes)
        assert (result.read.ios, result.read.bytes, result.write.ios, result.write.bytes) == \
            (2 * 98, 2 * 733_184, 2 * 52, 2 * 364_544)
        assert result.errors == 0
