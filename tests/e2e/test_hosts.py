"""Many hosts through fio's client/server mode, and a host whose fio server cannot be reached."""

from __future__ import annotations

import csv
import json
import socket
import subprocess

import pytest

from protolab.engine.status import documents, elapsed_ms, snapshots
from protolab.results.rundir import RunDir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LADDER = """
name = "ladder"
baseline = "a"
workloads = [{{ name = "tr3808-4k", read_pct = 100 }}]
[[configurations]]
name = "a"
target = "{data}"
ioengine = "libaio"
{hosts}
[[load_points]]
hosts = 1
streams = 2
oio = 4
[[load_points]]
hosts = {n}
streams = {streams}
oio = 4
[method]
warmup = "1s"
duration = "3s"
repeats = 1
data_size = "{size}"
"""


def test_eight_hosts_twenty_streams_four_oio(tmp_path, cli):
    """TR-3808's top rung, 8 × 20 × 4 = 640 outstanding I/Os, on this 2-core machine: no errors, and
    the total equals the sum over hosts and fio's own 'All clients' figure within 1 %."""
    plan = tmp_path / "p.toml"
    plan.write_text(LADDER.format(data=tmp_path / "d", hosts="", n=8, streams=20, size="640M"))
    (tmp_path / "d").mkdir()
    p = cli("run", plan, "--results", tmp_path / "r", timeout=600)
    assert p.returncode == 0, p.stderr
    run = next((tmp_path / "r").iterdir())
    rows = list(csv.DictReader((run / "cells.csv").open()))
    top = next(r for r in rows if r["total_oio"] == "640")
    assert top["hosts"] == "8" and top["jobs"] == "160" and top["errors"] == "0"
    full = next(r for r in RunDir.open(run).records() if "h8s20q4" in r.cell_id)
    rec = full.result.model_dump()
    per_host = rec["per_host_iops"]
    assert sorted(per_host) == [f"local{i}" for i in range(1, 9)]
    assert all(v > 0 for v in per_host.values())
    assert abs(sum(per_host.values()) / rec["iops"] - 1) < 0.01
    # the total is every job's I/Os between the window's boundaries in fio's own status documents: the k-th
    # status of every server came at the same time; the warm-up ended where the longest I/O time reached its
    # seconds, the window 3 s later (fio's 'All clients' sums only the first round of statuses when they come
    # every second, so it cannot be used)
    per = snapshots(documents(next(iter(run.glob("raw/*h8s20q4*.measure.json"))).read_text()))
    assert len(per) == 8
    n = max(len(v) for v in per.values())
    k = next(i for i in range(n) if abs(elapsed_ms(per, i) - full.warmup.seconds * 1000) < 0.5)
    j = next(i for i in range(k + 1, n) if elapsed_ms(per, i) - elapsed_ms(per, k) >= 2500)
    ios = sum(v[min(j, len(v) - 1)].ios - v[min(k, len(v) - 1)].ios for v in per.values())
    assert rec["read"]["ios"] == ios
    assert set(rec["per_host_cpu_s"]) == set(per_host) and all(v > 0 for v in rec["per_host_cpu_s"].values())
    assert set(RunDir.open(run).series()[full.seq]) == set(per_host) | {"all"}
    manifest = json.loads((run / "manifest.json").read_text())
    assert len(manifest["agents"]) == 8 and manifest["status"] == "complete"
    sockets = [a.split("(socket ")[1].rstrip(")") for a in manifest["agents"]]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines() if any(s.rsplit("/", 1)[0] in line for s in sockets)]


def test_unreachable_fio_server_names_the_host_and_keeps_cells(tmp_path, cli):
    port = _free_port()  # nothing listens there
    hosts = ('[[hosts]]\nname = "esx1"\nagent = "local"\n'
             f'[[hosts]]\nname = "esx2"\nagent = "fio://127.0.0.1:{port}"\n')
    plan = tmp_path / "p.toml"
    # a fio:// host makes the target the load hosts' path: named as a directory ('/'), with allow_overwrite
    text = LADDER.format(data=tmp_path / "d", hosts=hosts, n=2, streams=2, size="64M")
    plan.write_text(text.replace(f'target = "{tmp_path / "d"}"',
                                 f'target = {{ url = "{tmp_path / "d"}/", allow_overwrite = true }}'))
    (tmp_path / "d").mkdir()
    p = cli("run", plan, "--results", tmp_path / "r", timeout=300)
    assert p.returncode == 2, p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"protolab: error: host esx2: cannot reach its fio server at 127.0.0.1:{port}: "
                               "Connection refused; start 'fio --server' there or fix the address")
    run = next((tmp_path / "r").iterdir())
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert len(rows) == 1 and rows[0]["hosts"] == "1" and float(rows[0]["iops"]) > 0
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"
    assert RunDir.open(run).records()[0].result.iops > 0


@pytest.mark.parametrize("hosts,msg", [
    ('[[hosts]]\nname = "a"\nagent = "telnet://x"\n', "agent must be 'local', 'ssh://[USER@]HOST' or 'fio://HOST[:PORT]'"),
    ('[[hosts]]\nname = "a"\n', "a load point asks for 2 hosts but [[hosts]] names 1"),
])
def test_bad_hosts(tmp_path, cli, hosts, msg):
    plan = tmp_path / "p.toml"
    plan.write_text(LADDER.format(data=tmp_path / "d", hosts=hosts, n=2, streams=2, size="64M"))
    p = cli("validate", plan, timeout=60)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1
