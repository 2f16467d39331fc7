"""Targets on the load hosts are never checked or created on this machine, and need allow_overwrite."""

from __future__ import annotations

from conftest import run_cli

PLAN = """
name = "remote"
baseline = "a"
workloads = ["tr3808-4k"]
[[hosts]]
name = "esx1"
agent = "ssh://root@198.18.0.5"
[[configurations]]
name = "a"
target = {{ url = "{url}"{extra} }}
[[load_points]]
streams = 1
oio = 1
[method]
duration = "1s"
repeats = 1
data_size = "8M"
"""


def test_a_remote_target_needs_allow_overwrite_and_is_not_made_here(tmp_path):
    for url in ("/dev/sdz", str(tmp_path / "here" / "data.dat")):
        plan = tmp_path / "p.toml"
        plan.write_text(PLAN.format(url=url, extra=""))
        p = run_cli("validate", plan)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert f"target {url} (configuration 'a') is on the load hosts, which protolab cannot look into; add " \
               "allow_overwrite = true" in p.stderr
        plan.write_text(PLAN.format(url=url, extra=", allow_overwrite = true"))
        p = run_cli("validate", plan)
        assert p.returncode == 0, p.stderr
    assert not (tmp_path / "here").exists()
