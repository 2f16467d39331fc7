"""`protolab lab up PLAN`, `lab status`, `lab down` as a user runs them: the lab outlives the command."""

from __future__ import annotations

import pytest

from conftest import PREFIX, need_root_and_tools, run_cli, settled_leftovers, sh, workdir_for

pytestmark = pytest.mark.lab

PLAN = """
name = "labcli"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "{prefix}"
hosts = 2
pool_size = "1G"
export_size = "32M"
[lab.link]
rate = "10GbE"
[lab.exports]
nbd = [0]
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "iscsi-jumbo"
target = "lab:iscsi"
link = { mtu = 9000 }
[[load_points]]
streams = 1
"""


def test_lab_up_status_down_from_the_command_line(tmp_path):
    need_root_and_tools()
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("{prefix}", PREFIX))
    wd = workdir_for("cli")
    try:
        up = run_cli("lab", "up", plan, "--workdir", wd, timeout=120)
        assert up.returncode == 0, up.stderr
        assert "nbd://198.18.0.1:10809" in up.stdout and "admits hosts 0" in up.stdout
        assert f"iqn.2024-01.org.protolab:{PREFIX}.iscsi/1" in up.stdout
        # The servers outlive `lab up`: a granted host reaches NBD afterwards.
        size = sh(["nbdinfo", "--size", "nbd://198.18.0.1:10809"], netns=f"{PREFIX}-h0", timeout=10)
        assert size.returncode == 0 and int(size.stdout) == 32 * 1024 * 1024

        again = run_cli("lab", "up", plan, "--workdir", wd, timeout=60)
        assert again.returncode == 2 and "already up" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1

        status = run_cli("lab", "status", "--prefix", PREFIX, "--workdir", wd, timeout=60)
        assert status.returncode == 0 and "servers  nbdkit pid" in status.stdout
    finally:
        down = run_cli("lab", "down", "--prefix", PREFIX, "--workdir", wd, timeout=120)
    assert down.returncode == 0, down.stderr
    assert f"removed namespace {PREFIX}-st" in down.stdout
    assert settled_leftovers() == []
    twice = run_cli("lab", "down", "--prefix", PREFIX, "--workdir", wd, timeout=60)
    assert twice.returncode == 0 and "nothing to remove" in twice.stdout
