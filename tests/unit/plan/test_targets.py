"""The overwrite rule: a target that holds data is refused unless it says allow_overwrite = true."""

from __future__ import annotations

import pytest

from protolab.engine.targets import check_overwrite, create_file, resolve, sidecar
from protolab.errors import TargetError
from protolab.proc import Completed, FakeRunner


def _file(path, size=2**20):
    return resolve(str(path), size=size, ioengine=None, direct=True)


def test_nonempty_file_not_ours_is_refused(tmp_path):
    f = tmp_path / "precious.db"
    f.write_bytes(b"customer data")
    with pytest.raises(TargetError) as e:
        check_overwrite(_file(f), allow_overwrite=False, runner=FakeRunner(), label="configuration 'a'")
    assert str(e.value) == (f"target {f} (configuration 'a') is a non-empty file protolab did not create; "
                            "add allow_overwrite = true to the target of configuration 'a' if its contents may be destroyed")
    check_overwrite(_file(f), allow_overwrite=True, runner=FakeRunner(), label="a")  # opt-in
    assert f.read_bytes() == b"customer data"


def test_missing_empty_and_own_files_are_accepted(tmp_path):
    check_overwrite(_file(tmp_path / "new.dat"), allow_overwrite=False, runner=FakeRunner(), label="a")
    (tmp_path / "empty.dat").touch()
    check_overwrite(_file(tmp_path / "empty.dat"), allow_overwrite=False, runner=FakeRunner(), label="a")
    own = tmp_path / "own.dat"
    create_file(own, 2**20)
    assert own.stat().st_size == 2**20 and sidecar(own).exists()
    check_overwrite(_file(own), allow_overwrite=False, runner=FakeRunner(), label="a")


def test_directory_target_uses_protolab_dat(tmp_path):
    (tmp_path / "other").write_text("not touched")
    a = _file(tmp_path)
    assert a.local_path == tmp_path / "protolab.dat"


def _block(tmp_path):
    # a block device path for resolve(): /dev/loop-control is a char device, so fake the kind
    from dataclasses import replace

    return replace(_file(tmp_path / "dev"), kind="block")


@pytest.mark.parametrize("stdout,rc,refused", [
    ("DEVNAME=/dev/sdx\nUUID=1234\nTYPE=ext4\nUSAGE=filesystem\n", 0, "holds data \\(TYPE=ext4\\)"),
    ("DEVNAME=/dev/sdx\nPTUUID=ab\nPTTYPE=gpt\n", 0, "holds data \\(PTTYPE=gpt\\)"),
    ("", 2, "is a block device: protolab cannot tell whether it holds data"),  # no signature is not no data
])
def test_every_block_device_needs_allow_overwrite(tmp_path, stdout, rc, refused):
    runner = FakeRunner({("blkid",): Completed(("blkid",), rc, stdout, "")})
    a = _block(tmp_path)
    with pytest.raises(TargetError, match=f"{refused}.*; add allow_overwrite = true"):
        check_overwrite(a, allow_overwrite=False, runner=runner, label="a")
    assert runner.calls[0][0][:3] == ("blkid", "-p", "-o")
    check_overwrite(a, allow_overwrite=True, runner=runner, label="a")


def test_a_sidecar_is_trusted_only_when_it_is_a_root_owned_file(tmp_path):
    import os

    a = _file(tmp_path / "data")
    a.local_path.write_bytes(b"x" * 4096)
    mark = tmp_path / "data.protolab"
    runner = FakeRunner({})
    for plant in ("symlink", "nobody"):
        mark.unlink(missing_ok=True)
        if plant == "symlink":
            (tmp_path / "elsewhere").write_text("{}")
            mark.symlink_to(tmp_path / "elsewhere")
        else:
            if os.geteuid() != 0:
                continue
            mark.write_text("{}")
            os.chown(mark, 65534, 65534)
        with pytest.raises(TargetError, match="non-empty file protolab did not create"):
            check_overwrite(a, allow_overwrite=False, runner=runner, label="a")
    mark.unlink()
    mark.write_text("{}")
    check_overwrite(a, allow_overwrite=False, runner=runner, label="a")


def test_a_target_on_the_load_hosts_is_not_looked_at_here_and_needs_allow_overwrite(tmp_path):
    from protolab.engine.targets import resolve

    here = tmp_path / "here.dat"
    a = resolve(str(here), size=1 << 20, ioengine="psync", direct=True, remote=True)
    assert a.kind == "remote" and a.local_path is None and a.filename == str(here)
    with pytest.raises(TargetError, match="is on the load hosts, which protolab cannot look into; add allow_overwrite"):
        check_overwrite(a, allow_overwrite=False, runner=FakeRunner({}), label="a")
    check_overwrite(a, allow_overwrite=True, runner=FakeRunner({}), label="a")
    assert not here.exists()


def test_blkid_failure_is_refused_not_ignored(tmp_path):
    runner = FakeRunner({("blkid",): Completed(("blkid",), 4, "", "blkid: error: /dev/sdx: Permission denied")})
    with pytest.raises(TargetError, match="cannot tell whether it holds data"):
        check_overwrite(_block(tmp_path), allow_overwrite=False, runner=runner, label="a")


@pytest.mark.parametrize("url", ["iscsi://127.0.0.1/iqn.x:y/1", "nbd://127.0.0.1:10809"])
def test_remote_block_storage_needs_opt_in(url):
    a = resolve(url, size=2**20, ioengine=None, direct=True)
    with pytest.raises(TargetError, match="cannot see whether this .* storage holds data"):
        check_overwrite(a, allow_overwrite=False, runner=FakeRunner(), label="a")
    check_overwrite(a, allow_overwrite=True, runner=FakeRunner(), label="a")
    owned = resolve(url, size=2**20, ioengine=None, direct=True, owned=True)  # a lab export protolab made
    check_overwrite(owned, allow_overwrite=False, runner=FakeRunner(), label="a")
