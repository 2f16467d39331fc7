"""The pool: snapshot → overwrite → restore brings back the original bytes, served by the running servers."""

from __future__ import annotations

import os

import pytest

from conftest import sh, spec
from protolab.conventions import DATA_FILE

pytestmark = pytest.mark.lab

MiB = 1024 * 1024


@pytest.fixture
def lab(make_lab):
    """One host, NBD, NFS and local exports of 16 MiB, unshaped links (speed)."""
    from protolab.plan.topology import LinkSpec

    return make_lab(spec(export_size="16M", link=LinkSpec(rate=None)), {"nbd", "nfs", "local"})


def nbd_write(lab, data: bytes, tmp_path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    done = sh(["nbdcopy", str(src), lab.endpoint("nbd").url], netns=lab.names.host_ns(0), timeout=30)
    assert done.returncode == 0, done.stderr


def nbd_read(lab, tmp_path) -> bytes:
    dst = tmp_path / "dst.bin"
    done = sh(["nbdcopy", lab.endpoint("nbd").url, str(dst)], netns=lab.names.host_ns(0), timeout=30)
    assert done.returncode == 0, done.stderr
    return dst.read_bytes()


def nfs_cat(lab, name: str) -> bytes:
    done = sh(["nfs-cat", f"{lab.endpoint('nfs').url}/{name}"], netns=lab.names.host_ns(0), timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def overwrite(path: str, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.write(data)


def test_snapshot_overwrite_restore_brings_back_the_original_bytes(lab, tmp_path):
    original, other = os.urandom(MiB), os.urandom(MiB)
    local = lab.endpoint("local").url
    nfs_file = lab.workdir / lab.names.mount_dir / lab.names.nfs_mount / DATA_FILE
    nbd_write(lab, original, tmp_path)
    overwrite(local, original)
    overwrite(str(nfs_file), original)
    lab.snapshot()

    nbd_write(lab, other, tmp_path)
    overwrite(local, other)
    overwrite(str(nfs_file), other)
    extra = tmp_path / "extra.bin"
    extra.write_bytes(b"made after the snapshot")
    cp = sh(["nfs-cp", str(extra), f"{lab.endpoint('nfs').url}/extra"], netns=lab.names.host_ns(0), timeout=30)
    assert cp.returncode == 0, cp.stderr
    assert nbd_read(lab, tmp_path)[:MiB] == other
    assert nfs_cat(lab, DATA_FILE)[:MiB] == other

    pids = lab.server_pids()
    lab.restore()
    assert lab.server_pids() == pids  # the same servers serve the restored bytes, no restart
    whole = nbd_read(lab, tmp_path)
    assert len(whole) == lab.spec.export_bytes and whole[:MiB] == original
    assert open(local, "rb").read(MiB) == original
    data = nfs_cat(lab, DATA_FILE)
    assert len(data) == lab.spec.export_bytes and data[:MiB] == original
    assert not (lab.workdir / lab.names.mount_dir / lab.names.nfs_mount / "extra").exists()

    # Restore is repeatable: overwrite again, restore again.
    nbd_write(lab, other, tmp_path)
    lab.restore()
    assert nbd_read(lab, tmp_path)[:MiB] == original


def test_restore_without_snapshot_is_a_one_line_error(lab):
    from protolab.errors import ProtolabError

    with pytest.raises(ProtolabError, match="no snapshot"):
        lab.restore()


def test_cow_lab_keeps_copy_on_write(make_lab):
    lab = make_lab(spec(export_size="16M", cow=True), {"local"})
    attrs = sh(["lsattr", lab.endpoint("local").url], check=True).stdout.split()[0]
    assert b"C" not in attrs
