"""A plan asking for link delay or loss, on this machine's kernel: `validate` and `run` ask the kernel itself
(lab.netns.kernel_netem) and, where it has no netem, refuse in one line naming the file and field, exit 2, with
nothing created. Where the kernel has netem the plan is valid (the lab tests then measure the delay)."""

from __future__ import annotations

import os
import subprocess

import pytest

from protolab.lab.holder import path_of
from protolab.lab.names import default_workdir
from protolab.lab.netns import kernel_netem

PREFIX = "plnm"
PLAN = f"""
name = "netem"
baseline = "a"
workloads = ["tr3808-4k"]
[lab]
prefix = "{PREFIX}"
pool_size = "1G"
export_size = "128M"
[[configurations]]
name = "a"
target = "lab:nbd"
[[configurations]]
name = "far"
target = "lab:nbd"
link = {{ delay = "2ms" }}
[[load_points]]
streams = 1
oio = 1
[method]
duration = "2s"
repeats = 1
"""


def test_validate_and_run_refuse_delay_on_a_kernel_without_netem(tmp_path, cli, fio_path):
    if os.geteuid() != 0:
        pytest.skip("run needs root")
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    netem = kernel_netem()
    line = (f"protolab: error: {plan}: configurations[1] (far).link.delay: link delay and loss need the kernel's netem "
            "qdisc (sch_netem), which this kernel does not have; remove delay and loss_pct, or run on a kernel with "
            "netem\n")
    v = cli("validate", plan, timeout=120)
    if netem is not False:
        assert v.returncode == 0 and "plan 'netem' is valid" in v.stdout, v.stderr
        pytest.skip(f"this kernel has netem ({netem}): the plan is valid here")
    assert (v.returncode, v.stdout, v.stderr) == (2, "", line)

    r = cli("run", plan, "--results", tmp_path / "results", timeout=120)
    assert (r.returncode, r.stderr) == (2, line)
    assert not (tmp_path / "results").exists() and not default_workdir(PREFIX).exists()
    assert not path_of(PREFIX).exists()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not [n for n in namespaces.split() if n.startswith(f"{PREFIX}-")]
