"""The built guest image: fio with its libraries, busybox, and each role's modules after their dependencies."""

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


def image_kernel(image: Path) -> str:
    import json

    return json.loads((image / "guest.json").read_text())["kernel"]


def cpio(image: Path, *args: str) -> str:
    data = gzip.decompress((image / "initramfs.cpio.gz").read_bytes())
    return subprocess.run(["cpio", "-i", "--quiet", *args], input=data, capture_output=True, check=True).stdout.decode()


def test_initramfs_holds_fio_its_libraries_and_ordered_modules():
    image = built_image()
    names = set(cpio(image, "-t").split())
    assert {"init", "bin/fio", "bin/busybox", "lib64/ld-linux-x86-64.so.2"} <= names
    assert any(n.startswith("lib/x86_64-linux-gnu/libaio.so") for n in names)  # fio's libaio engine
    held = cpio(image, "--to-stdout", "etc/modules").split()
    assert len(held) == len(set(held)) and all(f"lib/modules/{m}" in names for m in held)  # each module held once
    group = {g: cpio(image, "--to-stdout", f"etc/modules.{g}").split()
             for g in ("base", "nvmet", "lio", "knfsd", "nvme", "iscsi", "nfs", "smb")}
    assert set(held) == {m for g in group.values() for m in g}
    for g, leaves in {"base": ("virtio_blk.ko", "virtio_scsi.ko", "sym53c8xx.ko", "megaraid_sas.ko", "vmw_pvscsi.ko",
                               "sd_mod.ko", "virtio_net.ko", "crc32c_generic.ko"),
                      "nvmet": ("nvmet-tcp.ko",), "lio": ("target_core_iblock.ko", "iscsi_target_mod.ko"),
                      "knfsd": ("nfsd.ko", "ext4.ko"), "nvme": ("nvme-tcp.ko",), "iscsi": ("iscsi_tcp.ko",),
                      "nfs": ("nfsv3.ko", "nfsv4.ko"),
                      # the CIFS client and the crypto SMB3 asks for by name (no modprobe in the guest)
                      "smb": ("cifs.ko", "sha512_generic.ko", "cmac.ko", "ccm.ko", "gcm.ko", "ghash-generic.ko")}.items():
        assert set(leaves) <= set(group[g]) and len(group[g]) == len(set(group[g])), g
    assert not {"nvmet-tcp.ko", "nfsd.ko", "iscsi_tcp.ko", "nvme-tcp.ko", "nfsv4.ko"} & set(group["base"])
    # dependencies (modules.dep) before what needs them, within the group that loads them
    for g, dep, user in [("base", "scsi_mod.ko", "sd_mod.ko"), ("base", "scsi_mod.ko", "vmw_pvscsi.ko"),
                         ("base", "scsi_transport_spi.ko", "sym53c8xx.ko"), ("base", "virtio_ring.ko", "virtio_pci.ko"),
                         ("base", "virtio.ko", "virtio_scsi.ko"), ("base", "net_failover.ko", "virtio_net.ko"),
                         ("nvmet", "nvmet.ko", "nvmet-tcp.ko"), ("nvme", "nvme-fabrics.ko", "nvme-tcp.ko"),
                         ("lio", "target_core_mod.ko", "iscsi_target_mod.ko"), ("knfsd", "sunrpc.ko", "nfsd.ko"),
                         ("knfsd", "jbd2.ko", "ext4.ko"), ("iscsi", "libiscsi_tcp.ko", "iscsi_tcp.ko"),
                         ("nfs", "nfs.ko", "nfsv4.ko"), ("smb", "netfs.ko", "cifs.ko"), ("smb", "cifs_md4.ko", "cifs.ko"),
                         ("smb", "gf128mul.ko", "ghash-generic.ko")]:
        assert group[g].index(dep) < group[g].index(user), (g, dep, user)
    init = cpio(image, "--to-stdout", "init")
    assert "fio --server=ip:0.0.0.0,8765" in init and "protolab-guest: fio server ready" in init
    # kernel data paths: the data NIC, nvmet-tcp's configfs export and the nvme-tcp connect, from the command line
    assert all(w in init for w in ("arg pl.mac", "/sys/kernel/config/nvmet", "> /dev/nvme-fabrics"))
    # the drivers always; a role's modules only when its word is on the command line, every initiator for ssh
    assert "load base\n" in init
    assert 'for r in nvmet lio knfsd nvme iscsi nfs smb; do [ -n "$(arg "pl.$r")" ] && load "$r"; done' in init
    assert '[ -n "$(arg pl.ssh)" ] && { load nvme; load iscsi; load nfs; load smb; }' in init
    # the SMB mount by busybox's mount and the kernel's options (vm.initiators.cifs), its password kept off the console
    assert 'mount -t cifs -o "ip=$A,username=$U,password=$P,$O" "//$A/$S" /mnt/pl' in init
    assert "pl\\.smb=" in init and "cat /proc/cmdline)\"" not in init


def test_build_is_idempotent(tmp_path):
    image = built_image()
    before = (image / "initramfs.cpio.gz").stat().st_mtime_ns
    done = subprocess.run([str(ROOT / "scripts/build-guest.sh"), str(image)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "is up to date" in done.stdout
    assert (image / "initramfs.cpio.gz").stat().st_mtime_ns == before
    check = subprocess.run([str(ROOT / "scripts/build-guest.sh"), "--check", str(image)], capture_output=True,
                           text=True, timeout=60)
    assert (check.returncode, check.stdout.split(" is ")[-1]) == (0, f"up to date (kernel {image_kernel(image)})\n")
