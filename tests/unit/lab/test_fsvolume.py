"""The knfsd volume (lab.fsvolume) against a fake runner: what it runs, in order, and what it records — the loop
device and the mount while this host holds the image, nothing once it has let go. (Against the real programs, a
real pool and a real server guest: tests/lab/test_attach_hosts.py and tests/lab/test_kernel_nvme.py.)"""

from __future__ import annotations

from protolab.lab.fsvolume import FsVolume
from protolab.lab.pool import Pool
from protolab.lab.record import Record
from protolab.plan.servers import fs_image_bytes, pool_need
from protolab.proc import Completed, FakeRunner

MiB = 1024**2


def test_the_image_is_made_held_filled_and_let_go_with_its_records(tmp_path):
    runner = FakeRunner({("losetup", "--find"): Completed((), 0, "/dev/loop7\n", "")})
    rec = Record.create(tmp_path, {"prefix": "pl"}, ["nfs"])
    pool = Pool(runner, rec, tmp_path / "pl-pool.img", tmp_path / "pl-mnt" / "pl-pool", 1024 * MiB)
    vol = FsVolume(runner, rec, pool, tmp_path / "pl-mnt" / "pl-pool-knfsd", "pl-knfsd.img", 128 * MiB)
    vol.create()
    image = str(tmp_path / "pl-mnt" / "pl-pool" / "ext4-volume" / "pl-knfsd.img")
    argv = [c[0] for c in runner.calls]
    assert argv[0][:4] == ("btrfs", "-q", "subvolume", "create") and argv[1][:2] == ("chattr", "+C")
    assert argv[2] == ("fallocate", "-l", str(fs_image_bytes(128 * MiB)), image)
    assert argv[3][0] == "mkfs.ext4" and argv[3][-1] == image and "lazy_itable_init=0" in argv[3][-2]
    assert argv[4] == ("losetup", "--find", "--show", image)
    assert argv[5] == ("mount", "-t", "ext4", "-o", "noatime", "/dev/loop7", str(vol.mount))
    assert argv[6] == ("fallocate", "-l", str(128 * MiB), str(vol.mount / "protolab.dat"))
    assert vol.held and [(r.kind, r.name) for r in Record.load(tmp_path).resources] == [
        ("loop", image), ("mount", str(vol.mount))]
    assert Record.load(tmp_path).resources[0].extra["device"] == "/dev/loop7"
    runner.calls.clear()
    vol.release()
    assert [c[0] for c in runner.calls] == [("umount", str(vol.mount)), ("losetup", "--detach", "/dev/loop7")]
    assert not vol.held and Record.load(tmp_path).resources == [] and not vol.mount.exists()
    runner.calls.clear()
    vol.release()  # let go already: nothing to do
    assert runner.calls == []


def test_the_pool_makes_room_for_the_knfsd_volume():
    assert fs_image_bytes(128 * MiB) == 128 * MiB + 64 * MiB + 2 * MiB
    assert pool_need(2, 128 * MiB, knfsd=False) == 512 * MiB
    assert pool_need(2, 128 * MiB, knfsd=True) == 706 * MiB
