"""trust.check_library: the preloaded libraries (protolab-direct.so, libeatmydata) are root's, under root's
directories, reached through at most a checked symlink — never something another user can change."""

from __future__ import annotations

import os

import pytest

from protolab.trust import UnsafePath, check_library


def test_a_root_library_under_root_directories_is_taken_through_its_link(tmp_path):
    os.chmod(tmp_path, 0o755)
    lib = tmp_path / "libx.so.1.0"
    lib.write_bytes(b"\x7fELF")
    os.chmod(lib, 0o644)  # a shared library need not be executable
    os.symlink(lib.name, tmp_path / "libx.so.1")
    assert check_library(tmp_path / "libx.so.1", "libx") == lib


def test_a_library_others_can_change_is_refused(tmp_path):
    os.chmod(tmp_path, 0o755)
    lib = tmp_path / "libx.so"
    lib.write_bytes(b"\x7fELF")
    os.chmod(lib, 0o666)
    with pytest.raises(UnsafePath, match="libx .*can be changed by a user other than root"):
        check_library(lib, "libx")
    os.chmod(lib, 0o644)
    os.chown(tmp_path, 65534, 65534)
    with pytest.raises(UnsafePath, match=r"libx .*libx\.so: .*owned by uid 65534"):
        check_library(lib, "libx")
