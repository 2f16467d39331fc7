"""The overwrite rule against real loop devices and the real CLI (root)."""

from __future__ import annotations

import csv
import subprocess

import pytest

from conftest import needs_root

pytestmark = pytest.mark.lab

PLAN = """
name = "ow"
baseline = "dev"
workloads = [{{ name = "tr3808-4k" }}]
[[configurations]]
name = "dev"
target = {{ url = "{dev}"{extra} }}
[[load_points]]
streams = 1
oio = 1
[method]
warmup = 0
duration = "1s"
repeats = 1
data_size = "16M"
"""


@pytest.fixture
def loopdev(tmp_path):
    needs_root()
    img = tmp_path / "protolab-test-disk.img"
    with open(img, "wb") as f:
        f.truncate(64 * 2**20)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=True,
                         timeout=30).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], timeout=30)
    assert str(img) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def test_block_device_with_filesystem_is_refused_then_allowed(loopdev, tmp_path, cli):
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, timeout=60, capture_output=True)
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dev=loopdev, extra=""))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().startswith(f"protolab: error: target {loopdev} (configuration 'dev') holds data (TYPE=ext4")
    assert "allow_overwrite = true" in p.stderr
    assert not (tmp_path / "results").exists()
    # The signature is untouched.
    assert "ext4" in subprocess.run(["blkid", "-p", loopdev], capture_output=True, text=True).stdout
    plan.write_text(PLAN.format(dev=loopdev, extra=", allow_overwrite = true"))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_blank_block_device_still_needs_allow_overwrite(loopdev, tmp_path, cli):
    """blkid finds no signature on a blank device, nor on dm-crypt or a raw database: not a sign of no data."""
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dev=loopdev, extra=""))
    for command in ("validate", "run"):
        extra = ("--results", tmp_path / "results") if command == "run" else ()
        p = cli(command, plan, *extra, timeout=120)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert f"{loopdev} (configuration" in p.stderr and "is a block device: protolab cannot tell" in p.stderr
    assert not (tmp_path / "results").exists()
    plan.write_text(PLAN.format(dev=loopdev, extra=", allow_overwrite = true"))
    p = cli("run", plan, "--results", tmp_path / "results", timeout=120)
    assert p.returncode == 0, p.stderr
    with next((tmp_path / "results").glob("*/cells.csv")).open() as f:
        rows = list(csv.DictReader(f))  # by name: cells.csv gains columns (protocol, device_model, …)
    assert len(rows) == 1 and float(rows[0]["iops"]) > 0, rows
