"""SMB3's attach on a user's host (run.attach_smb) against a fake shell and, for its own logic, sh over temporary
files: plan values reach the script only quoted, the credentials file is refused unless it is root's alone, who
logged in is not recorded, and the detach unmounts this run's mount point alone. The real script runs in
tests/lab/attach_smb.py (test_attach_hosts.py's guest reached over ssh, Samba in the lab)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from protolab.errors import ToolError
from protolab.plan.attach import Attach
from protolab.proc import Completed, FakeRunner
from protolab.run.attach_sh import FAILED
from protolab.run.attach_smb import CREDENTIALS, INITIATOR
from protolab.run.attaching import Attacher, attach_script, detach_script, same_storage
from protolab.run.hostinitiators import host_initiator
from protolab.run.hostshell import HostShell

SMB = Attach.model_validate({"smb": {"server": "filer", "share": "bench", "credentials": "/root/smb.cred",
                                     "options": ["seal", "rsize=65536"]}})
SSH = HostShell("esx1", ("ssh", "-n", "-p", "2222", "root@esx1"), "root@esx1", True)
MOUNT = "/run/protolab-attach/0123456789abcdef"
KERNEL = ("//filer/bench /run/protolab-attach/0123456789abcdef cifs rw,nosuid,nodev,noexec,nosymfollow,relatime,"
          "vers=3.1.1,cache=none,username=alice,domain=CORP,uid=0,noforceuid,gid=0,noforcegid,addr=10.1.2.6,"
          "file_mode=0755,dir_mode=0755,seal,soft,nounix,serverino,mapposix,rsize=65536,wsize=65536 0 0")


def test_the_host_initiator_is_registered_with_its_tool_module_and_package():
    assert host_initiator("smb") is INITIATOR
    assert (INITIATOR.tool, INITIATOR.module, INITIATOR.package, INITIATOR.mounted) == (
        "mount.cifs", "cifs", "cifs-utils", True)


def test_scripts_are_valid_sh_and_hold_plan_values_only_quoted():
    attach, detach = attach_script(SMB, MOUNT), detach_script(SMB, MOUNT)
    for s in (attach, detach):
        p = subprocess.run(["sh", "-n", "-c", s], capture_output=True, text=True, timeout=10)
        assert p.returncode == 0, p.stderr
    for value in ("/root/smb.cred", "//filer/bench", "filer"):  # on the variables line alone
        lines = [ln for ln in attach.splitlines() if value in ln]
        assert len(lines) == 1 and lines[0].startswith("M=") and shlex.split(lines[0]), (value, lines)
    assert "C=/root/smb.cred;" in attach and "O=vers=3.1.1,cache=none,seal,rsize=65536,nosuid,nodev,noexec;" in attach
    assert 'mount.cifs "$SRC" "$M" -o "credentials=$C,$O"' in attach
    assert attach.index(CREDENTIALS) < attach.index("mkdir") < attach.index("mount.cifs \"$SRC\"")  # refused first
    assert "nosymfollow" in attach and "password" not in attach.replace("password= lines", "")
    assert "filer" not in detach and 'umount "$M"' in detach and f"M={MOUNT}" in detach


def _credentials(path: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", f"C={shlex.quote(path)}\n" + CREDENTIALS], capture_output=True, text=True,
                          timeout=10, env={**os.environ, "PATH": f"{os.environ['PATH']}:/usr/sbin:/sbin"})


@pytest.mark.skipif(os.geteuid() != 0, reason="the owner check needs root's files")
def test_a_credentials_file_that_is_not_roots_alone_is_refused_in_one_line(tmp_path):
    cred = tmp_path / "smb.cred"
    cred.write_text("username=alice\npassword=hunter2hunter2\n")
    cred.chmod(0o600)
    ok = _credentials(str(cred))
    assert "credentials" not in ok.stdout  # what follows is the check for mount.cifs itself
    cred.chmod(0o400)
    assert "credentials" not in _credentials(str(cred)).stdout
    for mode, shown in ((0o644, "0644"), (0o640, "0640"), (0o604, "0604"), (0o620, "0620")):
        cred.chmod(mode)
        p = _credentials(str(cred))
        assert p.returncode == FAILED and p.stdout == (
            f"error credentials file {cred} has mode {shown}: group or others may read or write it; make it root's "
            f"alone (chown root:root {cred}; chmod 600 {cred}), holding username= and password= lines\n"), p.stdout
    cred.chmod(0o600)
    os.chown(cred, 1234, -1)
    assert "is owned by uid 1234, not root" in _credentials(str(cred)).stdout
    os.chown(cred, 0, -1)
    link = tmp_path / "link.cred"
    link.symlink_to(cred)
    assert f"error credentials file {link} is a symbolic link;" in _credentials(str(link)).stdout
    for absent in (tmp_path / "none", tmp_path):
        p = _credentials(str(absent))
        assert p.returncode == FAILED and "is not a regular file (or is not there)" in p.stdout
    assert "hunter2" not in _credentials(str(cred)).stdout


def test_a_refused_credentials_file_fails_the_attach_in_one_line_and_nothing_is_left():
    why = ("error credentials file /root/smb.cred has mode 0644: group or others may read or write it; make it "
           "root's alone (chown root:root /root/smb.cred; chmod 600 /root/smb.cred), holding username= and "
           "password= lines\n")
    runner = FakeRunner({("ssh",): lambda argv: Completed(tuple(argv), FAILED if "mount.cifs" in argv[-1] else 0,
                                                          why if "mount.cifs" in argv[-1] else "", "")})
    with pytest.raises(ToolError) as e:
        Attacher(runner, "run1").attach(SSH, "share", SMB, allow_overwrite=False)
    msg = str(e.value)
    assert msg.count("\n") == 0 and msg.startswith("host esx1: target share (SMB //filer/bench (vers=3.1.1,")
    assert msg.endswith("has mode 0644: group or others may read or write it; make it root's alone (chown "
                        "root:root /root/smb.cred; chmod 600 /root/smb.cred), holding username= and password= lines")
    assert 'umount "$M"' in runner.calls[-1][0][-1]  # the undo: this run's mount point, if anything was made


def test_the_recorded_mount_line_names_no_user_and_notes_what_the_kernel_changed():
    sed = next(ln for ln in attach_script(SMB, MOUNT).splitlines() if ln.startswith('grep " $M " /proc/mounts'))
    sed = sed.split("| ", 1)[1]
    p = subprocess.run(["sh", "-c", sed], input=KERNEL + "\n", capture_output=True, text=True, timeout=10)
    kernel = p.stdout.strip()
    assert kernel.startswith("kernel //filer/bench ") and "alice" not in kernel and "CORP" not in kernel
    assert "vers=3.1.1,cache=none,uid=0" in kernel
    out = (f"device {MOUNT}/protolab.dat\n{p.stdout}ident {MOUNT}/protolab.dat dev=51\n")
    runner = FakeRunner({("ssh",): lambda argv: Completed(tuple(argv), 0, out, "")})
    a = Attacher(runner, "run1").attach(SSH, "share", SMB, allow_overwrite=False)
    assert a.devices == (f"{MOUNT}/protolab.dat",) and a.idents == (f"{MOUNT}/protolab.dat dev=51",)
    assert a.found == () and a.record()["summary"] == [kernel[len("kernel "):]]
    wide = Attach.model_validate({"smb": {"server": "filer", "share": "bench", "credentials": "/root/smb.cred",
                                          "version": "3", "options": ["rsize=1048576"]}})
    assert INITIATOR.notes(wide.spec, KERNEL) == (
        "the kernel mounted with rsize=65536 where the plan asked rsize=1048576",)  # vers=3: whatever both have
    assert f"M={MOUNT}; F=protolab.dat; DEV=51" in INITIATOR.check(a.idents)


def test_two_attaches_of_one_server_take_turns():
    """As NFS's: the kernel shares one client (an SMB session) between mounts of a server, whatever the share."""
    other = Attach.model_validate({"smb": {"server": "filer", "share": "scratch", "credentials": "/etc/other.cred"}})
    elsewhere = Attach.model_validate({"smb": {"server": "filer2", "share": "bench", "credentials": "/root/c"}})
    assert same_storage(SMB, other) and not same_storage(SMB, elsewhere)


def test_doctor_checks_mount_cifs_and_the_cifs_module():
    from protolab.hostcheck import checks_from

    checks = checks_from("fio fio-3.33\ntool mount.cifs -\nmodule cifs yes\n", {"smb"}, {}, "esx1")
    assert [(c.item, c.ok) for c in checks] == [("fio", True), ("smb: mount.cifs", False), ("smb: module cifs", True)]
    assert checks[1].fix == "install mount.cifs on esx1 (Debian: cifs-utils)"
