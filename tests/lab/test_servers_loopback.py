"""Real protocol servers on loopback (nbdkit, tgt), each measured through `protolab run`, then stopped."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import needs_root

pytestmark = pytest.mark.lab

PLAN = """
name = "{name}"
baseline = "{name}"
workloads = ["tr3808-4k", "vmtn-max-read"]
[[configurations]]
name = "{name}"
target = {{ url = "{url}", allow_overwrite = true }}
[[load_points]]
streams = 1
oio = 1
[[load_points]]
streams = 2
oio = 4
[method]
warmup = "1s"
duration = "2s"
repeats = 1
data_size = "64M"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def check_run(results, cli, tmp_path, name, url):
    plan = tmp_path / f"{name}.toml"
    plan.write_text(PLAN.format(name=name, url=url))
    p = cli("run", plan, "--results", results, timeout=300)
    assert p.returncode == 0, p.stderr + p.stdout
    run = next(results.iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert len(rows) == 4  # 2 workloads × 2 load points
    for r in rows:
        assert float(r["iops"]) > 0 and int(r["errors"]) == 0, r
        assert float(r["lat_p99_us"]) >= float(r["lat_p50_us"]) > 0
    seq = [r for r in rows if r["workload"] == "vmtn-max-read"]
    assert all(float(r["write_iops"]) == 0 for r in seq)
    assert "vmtn-max-read" in p.stdout and "run directory" in p.stdout
    return rows


def test_nbdkit_memory_server(tmp_path, cli):
    needs_root()
    port = free_port()
    srv = subprocess.Popen(["nbdkit", "--foreground", "--exit-with-parent", "-i", "127.0.0.1", "-p", str(port),
                            "memory", "128M"], start_new_session=True, stderr=subprocess.PIPE)
    try:
        wait_port(port)
        check_run(tmp_path / "results", cli, tmp_path, "nbd", f"nbd://127.0.0.1:{port}")
    finally:
        stop(srv)
    assert srv.poll() is not None


def test_tgt_iscsi_server(tmp_path, cli):
    needs_root()
    port, control = free_port(), 900 + os.getpid() % 90
    lun = tmp_path / "lun.img"
    with open(lun, "wb") as f:
        f.truncate(128 * 2**20)
    iqn = "iqn.2026-11.org.protolab:loopback"
    srv = subprocess.Popen(["tgtd", "-f", "-C", str(control), "--iscsi", f"portal=127.0.0.1:{port}"],
                           start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    adm = ["tgtadm", "-C", str(control), "--lld", "iscsi"]
    try:
        wait_port(port)
        for args in (["--op", "new", "--mode", "target", "--tid", "1", "-T", iqn],
                     ["--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", "1", "-b", str(lun)],
                     ["--op", "bind", "--mode", "target", "--tid", "1", "-I", "127.0.0.1"]):
            subprocess.run(adm + args, check=True, timeout=30, capture_output=True)
        check_run(tmp_path / "results", cli, tmp_path, "iscsi", f"iscsi://127.0.0.1:{port}/{iqn}/1")
    finally:
        subprocess.run(adm + ["--op", "delete", "--mode", "target", "--tid", "1", "--force"], timeout=30,
                       capture_output=True)
        subprocess.run(adm + ["--op", "delete", "--mode", "system"], timeout=30, capture_output=True)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stop(srv)
    assert srv.poll() is not None
    assert f"-C {control}" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
