"""The remote path for real: sshd in two lab host namespaces (host 2's without Unix-socket forwarding, as
dropbear), fio servers started over ssh, one study."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
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
        pytest.skip("needs openssh-server (scripts/install-deps.sh test)")
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
                           "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                           + ("AllowStreamLocalForwarding no\n" if h == 1 else ""))  # protolab relays to host 2
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


def _fio_servers() -> dict[int, str]:
    """pid → socket of every fio server (and the children it forks) in a directory protolab's remote script made."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True).stdout.splitlines()
    found = {}
    for line in ps:
        pid, _, args = line.strip().partition(" ")
        m = re.search(r"--server=sock:(/tmp/protolab-fio\.[0-9a-f]{16}/fio\.sock)$", args)
        if m and "sh -c" not in args:
            found[int(pid)] = m[1]
    return found


def _tcp_listeners(netns: str) -> list[str]:
    """Every TCP listener in ``netns``: its address and process ('127.0.0.1:18765 users:(("python3",…))')."""
    out = subprocess.run(["ip", "netns", "exec", netns, "ss", "-Hltnp"], capture_output=True, text=True,
                         timeout=10).stdout
    return [f"{line.split()[3]} {' '.join(line.split()[5:])}" for line in out.splitlines() if line.strip()]


def _netns_of(pid: int) -> str:
    return subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True,
                          timeout=10).stdout.strip()


#: another user's listener on the port fio's server once took on 127.0.0.1: it notes each connection in a file
PLANTED = """
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 18765)); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept()
    with open(sys.argv[1], "a") as f:
        f.write("accepted\\n")
    c.close()
"""


def _plant(netns: str, record: Path) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", PLANTED, str(record)],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout.readline().strip() == "listening"
    return p


def test_study_through_ssh_started_fio_servers(lab_with_sshd, tmp_path):
    """Each host's fio server listens on a Unix socket in a fresh 0700 directory of root's and on no TCP port;
    host 1 is reached by ssh's forwarding, host 2 (no Unix-socket forwarding) by a relay over ssh; a listener
    planted on the old port before the run is never connected to; each server starts once for the run."""
    lab, addrs, client_cfg = lab_with_sshd
    namespaces = [lab.names.host_ns(h) for h in range(2)]
    records = [tmp_path / f"accepts-{h}" for h in range(2)]
    planted = [_plant(ns, rec) for ns, rec in zip(namespaces, records)]
    try:
        _run_study(lab, addrs, client_cfg, namespaces, tmp_path)
    finally:
        for p in planted:
            os.killpg(p.pid, 9)
            p.wait(timeout=10)
    # the listener another user planted on 127.0.0.1:18765 was never connected to
    assert [rec.exists() for rec in records] == [False, False]


def _run_study(lab, addrs, client_cfg, namespaces, tmp_path) -> None:
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
    before = set(Path("/run/protolab").glob("agents-*"))  # a killed run's, left on this machine, is not this run's
    run = subprocess.Popen(["ip", "netns", "exec", namespaces[0], sys.executable, "-m", "protolab.cli", "run",
                            str(plan), "--results", str(tmp_path / "r")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    servers: dict[str, tuple[str, int, int, bool]] = {}  # directory → (netns, mode, uid, a link)
    listeners: dict[str, set[str]] = {ns: set() for ns in namespaces}
    local: set[Path] = set()  # this run's private directory of local sockets (other runs may have theirs)
    deadline = time.monotonic() + 240
    while run.poll() is None and time.monotonic() < deadline:
        for pid, sock in _fio_servers().items():
            d = os.path.dirname(sock)
            if d not in servers:
                try:
                    st = os.lstat(d)
                except FileNotFoundError:
                    continue
                servers[d] = (_netns_of(pid), stat.S_IMODE(st.st_mode), st.st_uid, stat.S_ISLNK(st.st_mode))
        for ns in namespaces:
            listeners[ns].update(_tcp_listeners(ns))
        local.update(p.parent for p in Path("/run/protolab").glob("agents-*/esx1.*") if p.parent not in before)
        time.sleep(0.2)
    try:
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, 9)
    assert run.returncode == 0, err + out
    # one fio server per host for the whole run (both cells), each in its host's namespace, in a directory of
    # root's that only root can enter; no fio listened on TCP in either namespace, the planted listener did
    assert sorted(s[0] for s in servers.values()) == namespaces, servers
    assert all(mode == 0o700 and uid == 0 and not link for _, mode, uid, link in servers.values()), servers
    for ns in namespaces:
        assert not any("fio" in line for line in listeners[ns]), listeners
        assert any(line.startswith("127.0.0.1:18765 ") and "python" in line for line in listeners[ns]), listeners
    result_dir = next((tmp_path / "r").iterdir())
    manifest = json.loads((result_dir / "manifest.json").read_text())
    how = ["ssh's forwarding", "a relay (nc.openbsd) over ssh"]
    assert manifest["agents"] == [f"esx{i + 1}: fio server started over ssh on root@{a}, on a Unix socket in a "
                                  f"0700 directory there, reached by {how[i]}" for i, a in enumerate(addrs)]
    rows = list(csv.DictReader((result_dir / "cells.csv").open()))
    assert len(rows) == 2 and all(float(r["iops"]) > 0 and r["errors"] == "0" and r["jobs"] == "4" for r in rows)
    for rec in (result_dir / "records").glob("*.json"):
        result = json.loads(rec.read_text())["result"]
        assert set(result["per_host_iops"]) == {"esx1", "esx2"}
        assert all(v > 0 for v in result["per_host_iops"].values())
        assert set(result["per_host_cpu_s"]) == {"esx1", "esx2"}
    tree = subprocess.run(["ps", "-eo", "pid,ppid,stat,etimes,args"], capture_output=True, text=True).stdout
    assert _fio_servers() == {}, tree  # closing the ssh sessions stopped the remote fio servers
    assert not any(os.path.lexists(d) for d in servers)  # and removed their directories
    assert len(local) == 1 and not any(d.exists() for d in local)  # the local sockets' directory is gone


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
