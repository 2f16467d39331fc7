"""The built guest image: fio with its libraries, busybox, and every controller's module after its dependencies."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

ROOT = ROOT


def built_image() -> Path:
    for d in [os.environ.get("PROTOLAB_GUEST"), ROOT / ".guest", ROOT / ".deps" / "guest"]:
        if d and (Path(d) / "initramfs.cpio.gz").is_file():
            return Path(d)
    pytest.skip("no guest image; run scripts/build-guest.sh")


def cpio(image: Path, *args: str) -> str:
    data = gzip.decompress((image / "initramfs.cpio.gz").read_bytes())
    return subprocess.run(["cpio", "-i", "--quiet", *args], input=data, capture_output=True, check=True).stdout.decode()


def test_initramfs_holds_fio_its_libraries_and_ordered_modules():
    image = built_image()
    names = set(cpio(image, "-t").split())
    assert {"init", "bin/fio", "bin/busybox", "lib64/ld-linux-x86-64.so.2"} <= names
    assert any(n.startswith("lib/x86_64-linux-gnu/libaio.so") for n in names)  # fio's libaio engine
    order = cpio(image, "--to-stdout", "etc/modules").split()
    for leaf in ("virtio_blk.ko", "virtio_scsi.ko", "sym53c8xx.ko", "megaraid_sas.ko", "vmw_pvscsi.ko",
                 "sd_mod.ko", "virtio_net.ko", "nvmet-tcp.ko", "nvme-tcp.ko"):
        assert leaf in order and f"lib/modules/{leaf}" in names
    assert len(order) == len(set(order))  # each module loaded once
    # dependencies (modules.dep) before what needs them
    for dep, user in [("scsi_mod.ko", "sd_mod.ko"), ("scsi_mod.ko", "vmw_pvscsi.ko"),
                      ("scsi_transport_spi.ko", "sym53c8xx.ko"), ("virtio_ring.ko", "virtio_pci.ko"),
                      ("virtio.ko", "virtio_scsi.ko"), ("net_failover.ko", "virtio_net.ko")]:
        assert order.index(dep) < order.index(user), (dep, user)
    init = cpio(image, "--to-stdout", "init")
    assert "fio --server=ip:0.0.0.0,8765" in init and "protolab-guest: fio server ready" in init
    # kernel data paths: the data NIC, nvmet-tcp's configfs export and the nvme-tcp connect, from the command line
    assert all(w in init for w in ("arg pl.mac", "/sys/kernel/config/nvmet", "> /dev/nvme-fabrics"))
    assert order.index("nvmet.ko") < order.index("nvmet-tcp.ko")
    assert order.index("nvme-fabrics.ko") < order.index("nvme-tcp.ko")


def test_build_is_idempotent(tmp_path):
    image = built_image()
    before = (image / "initramfs.cpio.gz").stat().st_mtime_ns
    done = subprocess.run([str(ROOT / "scripts/build-guest.sh"), str(image)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "is up to date" in done.stdout
    assert (image / "initramfs.cpio.gz").stat().st_mtime_ns == before
