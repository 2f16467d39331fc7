"""A test driver compiled with the device model daemon's own source (its static functions, no FUSE mount)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[3] / "src/protolab/lab/blockdev/protolab-blockdev.c"


def build_driver(tmp_path_factory, name: str, driver_c: str) -> Path:
    """``driver_c`` (which includes SOURCE) built in a fresh folder; the test is skipped without gcc or fuse3."""
    if shutil.which("gcc") is None or shutil.which("pkg-config") is None:
        pytest.skip("needs gcc and pkg-config (make deps installs them)")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True)
    if flags.returncode != 0:
        pytest.skip("needs libfuse3-dev (make deps installs it)")
    out = tmp_path_factory.mktemp(name)
    (out / "driver.c").write_text(driver_c)
    built = subprocess.run(["gcc", "-O2", f'-DSOURCE="{SOURCE}"', "-o", str(out / "driver"), str(out / "driver.c"),
                            *flags.stdout.split()], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return out / "driver"
