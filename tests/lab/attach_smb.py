"""Issue 21's SMB step of test_attach_hosts.py, on its load guest: `attach = { smb = … }` on a user's host
(run.attach_smb). Samba in the lab's storage namespace (lab.servers.samba) shares a scratch directory. The host's
administrator writes the lab user's name and password into a root-only file in the guest (/root/smb.cred, mode 0600,
over ssh's stdin); the plan names only that file. protolab attaches the share with mount.cifs, prepares and measures
through it (fio in the guest writes and reads the data file), records the mount without who logged in, and detaches
it: nothing mounted, no mount point left, the password in no file of the run directory and in none of protolab's
output. Then the same plan with the file made 0644, and with a wrong password, fails in one line each and leaves
nothing mounted.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from test_samba_lab import Served

from protolab.lab import Lab
from protolab.lab.servers.samba import SHARE, USER, password
from protolab.vm.accel import free_port
from protolab.vm.guestssh import GuestSsh

CRED = "/root/smb.cred"


def serve(lab: Lab) -> Served:
    """Samba in the storage namespace, sharing a scratch directory of the lab's workdir with host 0's load guest.
    Its home is a sibling of the workdir, named by the prefix alone: under test_attach_hosts.py's long workdir name,
    smbd's messaging sockets (smb/lock/msg.sock/PID) had 109 bytes, more than the 107 a socket's path may, and it
    exited."""
    share = lab.workdir / "share"
    share.mkdir(mode=0o700)
    return Served(lab, [lab.names.load_guest_address(0, 0)], share=share, home=lab.workdir.parent / f"{lab.spec.prefix}-smb")


def _plan(lab: Lab, ssh: GuestSsh) -> str:
    return f"""
name = "attached-smb"
baseline = "smb"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 2, oio = 2 }}]
[[hosts]]
name = "guest"
agent = "ssh://root@127.0.0.1:{ssh.port}"
fio = "/bin/fio"
fio_port = {free_port()}
[[configurations]]
name = "smb"
target = "share"
ioengine = "libaio"
[targets.share]
attach = {{ smb = {{ server = "{lab.names.storage_address(0)}", share = "{SHARE}", credentials = "{CRED}" }} }}
[method]
warmup = "0s"
duration = "2s"
repeats = 1
data_size = "16M"
"""


def _ssh(lab: Lab, keys: Path, ssh: GuestSsh, script: str, stdin: str = "") -> subprocess.CompletedProcess:
    """``script`` in the guest as root; ``stdin`` its input (never a command line: the password goes this way)."""
    return subprocess.run(["ip", "netns", "exec", lab.names.host_ns(0), "ssh", "-F", str(keys / "ssh_config"), "-p",
                           str(ssh.port), "root@127.0.0.1", script], input=stdin, capture_output=True, text=True,
                          timeout=60)


def _left(lab: Lab, keys: Path, ssh: GuestSsh) -> str:
    """The guest's cifs mounts and protolab's mount points."""
    p = _ssh(lab, keys, ssh, "grep ' cifs ' /proc/mounts; ls -A /run/protolab-attach 2>/dev/null; echo end")
    assert p.returncode == 0 and p.stdout.strip().endswith("end"), p.stderr
    return p.stdout.strip().removesuffix("end").strip()


def _run(go, plan: Path, results: Path) -> tuple[int, str, str]:
    p = go(["run", str(plan), "--results", str(results)])
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err


def a_share_with_a_root_only_credentials_file(lab: Lab, served: Served, image, keys: Path, ssh: GuestSsh, go,
                                              tmp_path: Path) -> None:
    """The SMB step on the load guest reached as ``ssh`` (its ssh config in ``keys``); ``go`` starts protolab."""
    assert "mount.cifs" in image.info.get("tools", []), \
        "the guest image has no mount.cifs: run scripts/install-deps.sh guest again"
    share, secret = served.share_dir, password(served.home)
    # the host's administrator: the lab user's name and password in a file of root's alone
    admin = _ssh(lab, keys, ssh, f"mkdir -p /root && umask 077 && cat > {CRED} && stat -c '%U %a' {CRED}",
                 stdin=f"username={USER}\npassword={secret}\n")
    assert admin.stdout.strip() == "root 600", (admin.stdout, admin.stderr)
    plan = tmp_path / "smb.toml"
    plan.write_text(_plan(lab, ssh))
    code, out, err = _run(go, plan, tmp_path / "smb")
    assert code == 0, err + out
    rundir = next((tmp_path / "smb").iterdir())
    [got] = json.loads((rundir / "manifest.json").read_text())["attached"]
    mount = got["devices"][0]
    assert got["target"] == "share" and got["protocol"] == "smb" and got["host"] == "guest", got
    assert mount.startswith("/run/protolab-attach/") and mount.endswith("/protolab.dat"), got
    kernel = got["kernel"]  # the guest's /proc/mounts line, without who logged in
    assert f"//{lab.names.storage_address(0)}/{SHARE} " in kernel and " cifs " in kernel, kernel
    for flag in ("nosuid", "nodev", "noexec", "nosymfollow", "vers=3.1.1", "cache=none"):
        assert flag in kernel.split()[3].split(","), (flag, kernel)
    assert "username=" not in kernel and USER not in kernel.split()[3], kernel
    [row] = list(csv.DictReader((rundir / "cells.csv").open()))
    assert float(row["read_iops"]) > 0 and float(row["write_iops"]) > 0 and row["errors"] == "0", row
    # fio's data file and protolab's marker, as Samba's directory holds them (written through the share)
    assert (share / "protolab.dat").stat().st_size == 16 << 20 and (share / "protolab.dat.protolab").is_file()
    assert _left(lab, keys, ssh) == ""  # unmounted, its mount point gone
    for f in rundir.rglob("*"):
        assert not f.is_file() or secret.encode() not in f.read_bytes(), f
    assert secret not in out + err
    print(f"\nattached {got['asked']} on the guest over ssh: {float(row['read_iops']):.0f} read and "
          f"{float(row['write_iops']):.0f} write IOPS; {got['summary'][0][:160]}")

    # a credentials file others may read: refused in one line, before anything is mounted
    assert _ssh(lab, keys, ssh, f"chmod 644 {CRED}").returncode == 0
    code, out, err = _run(go, plan, tmp_path / "smb644")
    errors = [ln for ln in err.splitlines() if ln.startswith("protolab: error")]
    assert code != 0 and len(errors) == 1, (code, err)
    assert f"credentials file {CRED} has mode 0644: group or others may read or write it; make it root's alone " \
           f"(chown root:root {CRED}; chmod 600 {CRED})" in errors[0], errors
    assert _left(lab, keys, ssh) == ""
    print(f"0644: {errors[0]}")

    # a wrong password: mount.cifs's own error, in one line
    wrong = _ssh(lab, keys, ssh, f"umask 077 && cat > {CRED}.new && mv {CRED}.new {CRED}",
                 stdin=f"username={USER}\npassword={'0' * 32}\n")
    assert wrong.returncode == 0, wrong.stderr
    code, out, err = _run(go, plan, tmp_path / "smbpw")
    errors = [ln for ln in err.splitlines() if ln.startswith("protolab: error")]
    assert code != 0 and len(errors) == 1 and "mount.cifs: mount error(13): Permission denied" in errors[0], err
    assert _left(lab, keys, ssh) == ""
    print(f"wrong password: {errors[0]}")
