"""NFS-Ganesha over a device model meets the model as tgt and fio's direct path do (protolab-direct.so).

Without it (measured 2026-11-26, hdd-array, 3 streams × 4 OIO, 75 % reads): reads of data already in the host's
page cache took ~0.3–1 ms where the model says 5.5 ms, and every 4 KiB write waited 6–20 ms behind btrfs's inode
lock while another writer's delalloc metadata reservation flushed — NFS reached 0.75–0.81 of the direct path's IOPS.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIO, leftovers, sh, spec
from protolab.conventions import DATA_FILE
from protolab.lab.device import find_blockdev, find_direct_lib, fuse_available
from protolab.plan.storage import StorageSpec

pytestmark = pytest.mark.lab

STORAGE = {"service_time": "5ms", "parallelism": 32, "write_time": "500us"}


def _fio(netns: str, url: str, *args: str) -> dict:
    done = sh([str(FIO), "--name=nfs", "--ioengine=nfs", f"--nfs_url={url}", f"--filename={DATA_FILE}", "--bs=4k",
               "--output-format=json", *args], netns=netns, timeout=90)
    assert done.returncode == 0, done.stderr.decode()[-500:]
    return json.loads(done.stdout)["jobs"][0]


def test_nfs_reads_and_writes_reach_the_device_model_past_the_page_cache(make_lab):
    if not fuse_available() or find_blockdev()[0] is None or find_direct_lib() is None or not FIO.exists():
        pytest.skip("the device model needs FUSE, protolab-blockdev, protolab-direct.so and fio ('make deps')")
    model = StorageSpec(**STORAGE)
    lab = make_lab(spec(export_size="64M", storage=STORAGE), {"nfs"})
    url, netns = lab.endpoint("nfs").url, lab.names.host_ns(0)
    assert "protolab-direct.so" in lab.device()["caches"]["nfs"]
    _fio(netns, url, "--rw=write", "--size=1M")  # written through NFS-Ganesha: in the page cache, were it used
    reads = _fio(netns, url, "--rw=randread", "--size=1M", "--iodepth=1", "--time_based", "--runtime=3")["read"]
    read_us = reads["lat_ns"]["mean"] / 1000
    # 256 blocks read ~600 times each: from the page cache a read takes well under 1 ms; from the model, 5 ms
    assert read_us >= 0.9 * model.latency_us(4096), (read_us, model.latency_us(4096))
    _fio(netns, url, "--rw=write", "--size=32M", "--bs=1M")
    mixed = _fio(netns, url, "--rw=randrw", "--rwmixread=75", "--size=32M", "--iodepth=4", "--numjobs=3",
                 "--offset_increment=8M", "--group_reporting", "--time_based", "--runtime=3")
    write_us = mixed["write"]["lat_ns"]["mean"] / 1000
    # the model acknowledges writes in 0.5 ms; through the page cache they waited 6–20 ms
    assert write_us <= 5 * model.write_us, (write_us, mixed["read"]["lat_ns"]["mean"] / 1000)
    lab.down()
    assert leftovers(lab.spec.prefix) == []
