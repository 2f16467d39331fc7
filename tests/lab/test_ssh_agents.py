"""The remote path for real: sshd in two lab host namespaces, fio servers started over ssh, one study."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIO, LABTEST_ROOT, family_prefix, leftovers, need_root_and_tools
from protolab.lab import Lab, down_all
from protolab.plan.topology import LabSpec

pytestmark = pytest.mark.lab
PREFIX = family_prefix("r")


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30)


@pytest.fixture
def lab_with_sshd(tmp_path):
    need_root_and_tools()
    if not Path("/usr/sbin/sshd").exists():
        pytest.skip("needs openssh-server (make deps)")
    workdir = LABTEST_ROOT / "ssh-agents"
    shutil.rmtree(workdir, ignore_errors=True)
    lab = Lab(LabSpec(prefix=PREFIX, hosts=2, pool_size="1G", export_size="128M"), {"nbd"}, workdir)
    sshds: list[subprocess.Popen] = []
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    try:
        lab.up()
        _keygen(keys / "host_key")
        _keygen(keys / "id")
        (keys / "authorized_keys").write_text((keys / "id.pub").read_text())
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
        addrs = [lab.names.host_link(h, 0).address.split("/")[0] for h in range(2)]
        for h, addr in enumerate(addrs):
            cfg = keys / f"sshd-{h}.conf"
            cfg.write_text(f"ListenAddress {addr}\nPort 22\nHostKey {keys / 'host_key'}\n"
                           f"PidFile {keys / f'sshd-{h}.pid'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
                           "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                           "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n")
            sshds.append(subprocess.Popen(["ip", "netns", "exec", lab.names.host_ns(h), "/usr/sbin/sshd", "-D",
                                           "-e", "-f", str(cfg)], stderr=subprocess.DEVNULL, start_new_session=True))
        client_cfg = keys / "ssh_config"
        client_cfg.write_text(f"Host *\n  IdentityFile {keys / 'id'}\n  StrictHostKeyChecking no\n"
                              "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        time.sleep(1)
        yield lab, addrs, client_cfg
    finally:
        for p in sshds:
            p.kill()
            p.wait(timeout=10)
        lab.down()
        left = leftovers(PREFIX)
        if left:
            down_all(PREFIX, workdirs=[workdir])
            pytest.fail(f"left behind: {', '.join(left)}")
        shutil.rmtree(workdir, ignore_errors=True)


def _fio_servers() -> list[str]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [p for p in ps if "--server=ip:" in p and ",18765" in p and "sh -c" not in p]


def _listeners(netns: str) -> list[str]:
    """Local addresses listening on the fio port in ``netns`` ('127.0.0.1:18765')."""
    out = subprocess.run(["ip", "netns", "exec", netns, "ss", "-Hltn", "sport = :18765"], capture_output=True,
                         text=True, timeout=10).stdout
    return [line.split()[3] for line in out.splitlines() if line.strip()]


def test_study_through_ssh_started_fio_servers(lab_with_sshd, tmp_path):
    lab, addrs, client_cfg = lab_with_sshd
    storage = lab.endpoint("nbd", host=0).url
    hosts = "".join(
        f'[[hosts]]\nname = "esx{i + 1}"\nagent = "ssh://root@{a}"\nfio = "{FIO}"\nfio_port = 18765\n'
        'ssh_options = ["-o", "ConnectTimeout=5"]\n' for i, a in enumerate(addrs))
    plan = tmp_path / "remote.toml"
    plan.write_text(f"""
name = "remote"
baseline = "nbd"
workloads = ["tr3808-4k"]
{hosts}
[[configurations]]
name = "nbd"
target = {{ url = "{storage}", allow_overwrite = true }}
[[load_points]]
hosts = 2
streams = 2
oio = 4
[method]
warmup = "1s"
duration = "2s"
repeats = 2
data_size = "64M"
""")
    # protolab runs where a user's controller would: on the lab network (host 0's namespace); the ssh config is
    # the operator's (PROTOLAB_SSH_CONFIG), never the plan's
    env = {**os.environ, "COLUMNS": "200", "PROTOLAB_SSH_CONFIG": str(client_cfg)}
    run = subprocess.Popen(["ip", "netns", "exec", lab.names.host_ns(0), sys.executable, "-m", "protolab.cli", "run",
                            str(plan), "--results", str(tmp_path / "r")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    seen: dict[str, list[str]] = {}
    deadline = time.monotonic() + 120
    while run.poll() is None and len(seen) < 2 and time.monotonic() < deadline:
        for h in range(2):
            found = _listeners(lab.names.host_ns(h))
            if found:
                seen[lab.names.host_ns(h)] = found
        time.sleep(0.2)
    try:
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, 9)
    p = subprocess.CompletedProcess(run.args, run.returncode, out, err)
    # each host's fio server listened on its own loopback only: the lab network never reached it
    assert seen == {lab.names.host_ns(h): ["127.0.0.1:18765"] for h in range(2)}, seen
    assert p.returncode == 0, p.stderr + p.stdout
    run = next((tmp_path / "r").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["agents"] == [f"esx{i + 1}: fio server started over ssh on root@{a}, port 18765"
                                  for i, a in enumerate(addrs)]
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert len(rows) == 2 and all(float(r["iops"]) > 0 and r["errors"] == "0" and r["jobs"] == "4" for r in rows)
    for rec in (run / "records").glob("*.json"):
        result = json.loads(rec.read_text())["result"]
        assert set(result["per_host_iops"]) == {"esx1", "esx2"}
        assert all(v > 0 for v in result["per_host_iops"].values())
        assert set(result["per_host_cpu_s"]) == {"esx1", "esx2"}
    tree = subprocess.run(["ps", "-eo", "pid,ppid,stat,etimes,args"], capture_output=True, text=True).stdout
    assert _fio_servers() == [], tree  # closing the ssh sessions stopped the remote fio servers
    assert all(_listeners(lab.names.host_ns(h)) == [] for h in range(2))
    assert not list(Path("/run/protolab").glob("agents-*"))  # the forwards' socket directory is gone


def _has_module(name: str) -> bool:
    return Path(f"/sys/module/{name}").exists() or subprocess.run(
        ["modinfo", name], capture_output=True, timeout=30).returncode == 0


def test_doctor_checks_each_host_over_ssh(lab_with_sshd, tmp_path):
    """`doctor --hosts`: both sshd hosts reached, their fio's version, the NFS attach's tool, module and route MTU
    as this machine has them (the namespaces share its files and kernel); a host with no sshd named in one line."""
    lab, addrs, client_cfg = lab_with_sshd
    server = lab.endpoint("nbd", host=0).url.split("//")[1].split(":")[0]
    silent = "198.18.0.250"  # in the lab's range, where nothing answers
    hosts = "".join(f'[[hosts]]\nname = "esx{i + 1}"\nagent = "ssh://root@{a}"\nfio = "{FIO}"\n'
                    'ssh_options = ["-o", "ConnectTimeout=3"]\n' for i, a in enumerate([*addrs, silent]))
    plan = tmp_path / "hosts.toml"
    plan.write_text(f"""
name = "hosts"
baseline = "filer"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 1 }}]
{hosts}
[[configurations]]
name = "filer"
target = "filer"
[targets.filer]
attach = {{ nfs = {{ server = "{server}", export = "/export", version = 3 }} }}
""")
    env = {**os.environ, "COLUMNS": "200", "PROTOLAB_SSH_CONFIG": str(client_cfg)}
    p = subprocess.run(["ip", "netns", "exec", lab.names.host_ns(0), sys.executable, "-m", "protolab.cli", "doctor",
                        "--hosts", str(plan), "--json"], capture_output=True, text=True, env=env, timeout=120)
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["ok"] is False, p.stderr
    by_host = {s["section"]: {c["item"]: c for c in s["checks"]} for s in doc["sections"]}
    version = subprocess.run([FIO, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    tool = shutil.which("mount.nfs", path="/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin")
    mtu = lab.link.mtu
    for i, a in enumerate(addrs):
        checks = by_host[f"host esx{i + 1} (ssh://root@{a})"]
        assert checks["reached"]["ok"] and checks["fio"]["detail"] == version
        assert checks["nfs: mount.nfs"]["ok"] == (tool is not None)
        assert checks["nfs: module nfs"]["ok"] == _has_module("nfs")
        route = checks[f"nfs: route to {server}"]
        assert route["ok"] and route["detail"].endswith(f", MTU {mtu}"), route
    gone = by_host[f"host esx3 (ssh://root@{silent})"]
    assert list(gone) == ["reached"] and not gone["reached"]["ok"]
    assert f"ssh root@{silent} true" in gone["reached"]["fix"] and "\n" not in gone["reached"]["detail"]
