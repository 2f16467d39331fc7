"""What a run's attach is known by (issue 40): the scripts' own logic run by sh over a fake sysfs, /dev and
/proc/mounts in a temporary folder — a disk's identity checked before each window, an NVMe controller matched
by identity before its disconnect, the NFS data file checked on its nosymfollow mount — and the run's key and
iSCSI iface, which are the run's own, not its path's. The real scripts run in tests/lab/test_attach_hosts.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from protolab.errors import ToolError
from protolab.plan.attach import Attach
from protolab.plan.load import load_plan_text
from protolab.proc import Completed, FakeRunner
from protolab.results.manifest import Provenance, RunStart
from protolab.results.rundir import RunDir
from protolab.run import attach_iscsi, attach_nvme
from protolab.run import attachments as attachments_mod
from protolab.run.attach_sh import CHANGED, IDENT, check_disks, check_mount
from protolab.run.attaching import Attached, Attacher, attach_script, detach_script
from protolab.run.attachments import Attachments, run_key
from protolab.run.hostshell import HostShell
from protolab.run.progress import Silent

NVME = Attach.model_validate({"nvme-tcp": {"address": "10.1.2.5", "nqn": "nqn.2014-08.org.example:flash"}})
ISCSI = Attach.model_validate({"iscsi": {"portal": "10.1.2.3:3260", "iqn": "iqn.2001-05.com.example:array"}})
SSH = HostShell("esx1", ("ssh", "-n", "root@esx1"), "root@esx1", True)


def _sh(script: str, root: Path, extra: str = "") -> subprocess.CompletedProcess:
    """``script`` with its absolute /sys, /dev and /proc paths moved under ``root``."""
    for p in ("/sys/", "/dev/$n", "/proc/mounts"):
        script = script.replace(p, f"{root}{p}")
    return subprocess.run(["sh", "-c", extra + script], capture_output=True, text=True, timeout=20)


def _gone(root: Path, d: Path) -> None:
    """``d`` away, kept aside: its inode is not reused (kernfs numbers its nodes cyclically, tmpfs does not)."""
    if d.exists():
        aside = root / "gone"
        aside.mkdir(exist_ok=True)
        d.rename(aside / str(len(list(aside.iterdir()))))


def _disk(root: Path, name: str, mm: str, wwid: str, session: int | None = None) -> None:
    """A disk as sysfs shows it: its device directory (under an iSCSI session's when ``session``), its class
    link, its major:minor link and its /dev node."""
    where = root / "sys/devices/platform" / (f"host2/session{session}/target2:0:0/2:0:0:0" if session else "pci")
    d = where / "block" / name
    _gone(root, d)
    (d / "device").mkdir(parents=True)
    (d / "dev").write_text(mm + "\n")
    (d / "device" / "wwid").write_text(wwid + "\n")
    for link in (root / "sys/class/block" / name, root / "sys/dev/block" / mm):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(d)
    node = root / "dev" / name
    node.parent.mkdir(exist_ok=True)
    node.unlink(missing_ok=True)
    major, minor = map(int, mm.split(":"))
    os.mknod(node, 0o600 | 0o060000, os.makedev(major, minor))


def _ident(root: Path, dev: str) -> str:
    p = _sh(IDENT + f'\nident "{dev}"', root)
    assert p.returncode == 0, p.stderr
    return f"{dev} {p.stdout.strip()}"


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a block device node (root)")
def test_a_device_name_that_now_names_another_disk_fails_the_check(tmp_path):
    _disk(tmp_path, "sda", "8:0", "naa.6001405aaaa")
    _disk(tmp_path, "sdb", "8:16", "naa.6001405bbbb")
    idents = (_ident(tmp_path, "/dev/sda"), _ident(tmp_path, "/dev/sdb"))
    assert idents[0].startswith("/dev/sda 8:0 ino=") and idents[0].endswith(" wwid=naa.6001405aaaa"), idents
    assert _sh(check_disks(idents), tmp_path).returncode == 0  # nothing changed

    _disk(tmp_path, "sdb", "8:16", "naa.6001405cccc")  # sdb went; another disk came under its name and numbers
    p = _sh(check_disks(idents), tmp_path)
    assert p.returncode == CHANGED and p.stdout.count("error ") == 1, p.stdout
    assert p.stdout.startswith("error /dev/sdb is no longer the disk this run attached (attached: 8:16 ino=")
    assert "now: 8:16 ino=" in p.stdout and "wwid=naa.6001405cccc" in p.stdout

    _disk(tmp_path, "sdb", "8:16", "naa.6001405bbbb")  # the same LUN again: still a disk made anew (its ino)
    assert _sh(check_disks(idents), tmp_path).returncode == CHANGED
    shutil.rmtree(tmp_path / "sys/devices/platform/pci/block/sda")  # gone
    p = _sh(check_disks(idents[:1]), tmp_path)
    assert p.returncode == CHANGED and "now: gone" in p.stdout, p.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a block device node (root)")
def test_a_disk_behind_an_iscsi_session_is_known_by_the_sessions_iface_too(tmp_path):
    _disk(tmp_path, "sda", "8:0", "naa.6001405aaaa", session=3)
    s = tmp_path / "sys/class/iscsi_session/session3"
    s.mkdir(parents=True)
    (s / "ifacename").write_text("protolab-0123456789abcdef\n")
    (s / "targetname").write_text("iqn.2001-05.com.example:array\n")
    ident = _ident(tmp_path, "/dev/sda")
    assert ident.endswith(" iface=protolab-0123456789abcdef target=iqn.2001-05.com.example:array"), ident
    (s / "ifacename").write_text("default\n")  # the name now a disk of someone else's session to the same LUN
    p = _sh(check_disks((ident,)), tmp_path)
    assert p.returncode == CHANGED and "iface=default" in p.stdout.split("now: ")[1], p.stdout


def _controller(root: Path, name: str, cntlid: str, hostnqn: str = "nqn.h") -> None:
    d = root / "sys/class/nvme" / name
    _gone(root, d)
    d.mkdir(parents=True)
    for k, v in (("cntlid", cntlid), ("subsysnqn", "nqn.2014-08.org.example:flash"), ("hostnqn", hostnqn),
                 ("address", "traddr=10.1.2.5,trsvcid=4420,src_addr=10.1.2.9")):
        (d / k).write_text(v + "\n")


def _fake_nvme(root: Path) -> str:
    """nvme-cli as a shell function: a disconnect logs itself and removes the controller."""
    return f'nvme() {{ echo "$*" >> {root}/log; rm -r "{root}/sys/class/nvme/$3"; }}\n'


def test_an_nvme_controller_name_reused_by_someone_elses_connect_survives_the_detach(tmp_path):
    _controller(tmp_path, "nvme0", "1")
    attach = attach_script(NVME, str(tmp_path / "m"))
    cid = attach[attach.index("cid() {"):attach.index("}", attach.index("cid() {")) + 1]
    mine = _sh(cid + "\ncid nvme0", tmp_path).stdout.strip()
    assert attach_nvme.CONTROLLER.fullmatch(mine), mine
    # a kill, the path lost, the controller gone; the user's own connect to the same subsystem gets its name
    _controller(tmp_path, "nvme0", "1")
    p = _sh(detach_script(NVME, str(tmp_path / "m"), (mine,)), tmp_path, _fake_nvme(tmp_path))
    assert p.returncode == 0 and p.stdout.startswith("note nvme0 is not the controller this run connected"), p
    assert not (tmp_path / "log").exists() and (tmp_path / "sys/class/nvme/nvme0").is_dir()  # left alone
    notes = Attacher(FakeRunner({("ssh",): lambda argv: Completed(tuple(argv), 0, p.stdout, "")}), "k").detach(
        SSH, "flash", NVME, (mine,))
    assert notes == [f"host esx1: target flash: {p.stdout.strip()[5:]}"]
    # the very controller it connected is disconnected, and only it
    _controller(tmp_path, "nvme1", "2")
    theirs = _sh(cid + "\ncid nvme1", tmp_path).stdout.strip()
    now = _sh(cid + "\ncid nvme0", tmp_path).stdout.strip()
    (tmp_path / "m.ids").write_text(f"{now}\n")  # what the attach wrote on the host, for a detach not told
    p = _sh(detach_script(NVME, str(tmp_path / "m"), None), tmp_path, _fake_nvme(tmp_path))
    assert p.returncode == 0 and (tmp_path / "log").read_text() == "disconnect -d nvme0\n", p
    assert (tmp_path / "sys/class/nvme/nvme1").is_dir() and not (tmp_path / "m.ids").exists()
    _controller(tmp_path, "nvme1", "2", hostnqn="nqn.other")  # another host NQN: not the one recorded
    p = _sh(detach_script(NVME, str(tmp_path / "m"), (theirs,)), tmp_path, _fake_nvme(tmp_path))
    assert "note nvme1" in p.stdout and (tmp_path / "sys/class/nvme/nvme1").is_dir()


def _mounts(root: Path, mount: Path, options: str) -> None:
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc" / "mounts").write_text(f"filer:/vol/bench {mount} nfs4 {options} 0 0\n")


def test_the_nfs_data_file_is_checked_on_its_nosymfollow_mount_before_every_window(tmp_path):
    m = tmp_path / "m"
    m.mkdir()
    flags = "rw,nosuid,nodev,noexec,nosymfollow,relatime,vers=4.1"
    _mounts(tmp_path, m, flags)
    dev = str(m.stat().st_dev)
    check = check_mount((f"{m}/protolab.dat dev={dev}",))
    assert _sh(check, tmp_path).returncode == 0  # not there yet: fio makes it
    (m / "protolab.dat").write_bytes(b"x" * 4096)
    assert _sh(check, tmp_path).returncode == 0
    (m / "protolab.dat").unlink()
    victim = tmp_path / "victim"
    victim.write_text("the host's own\n")
    (m / "protolab.dat").symlink_to(victim)  # swapped on the export between two windows
    p = _sh(check, tmp_path)
    assert p.returncode == CHANGED and p.stdout.strip() == f"error {m}/protolab.dat is now a symbolic link (the " \
        "export's contents changed)", p.stdout
    (m / "protolab.dat").unlink()
    (m / "protolab.dat").mkdir()
    assert "no longer a plain file" in _sh(check, tmp_path).stdout
    (m / "protolab.dat").rmdir()
    _mounts(tmp_path, m, flags.replace("nosymfollow,", ""))
    assert "no longer mounted nosuid,nodev,noexec,nosymfollow" in _sh(check, tmp_path).stdout
    _mounts(tmp_path, m, flags)
    assert "no longer the file system" in _sh(check_mount((f"{m}/protolab.dat dev=1",)), tmp_path).stdout
    with (tmp_path / "proc" / "mounts").open("a") as f:
        f.write(f"tmpfs {m} tmpfs rw 0 0\n")  # something mounted over it
    assert "not this run's mount alone" in _sh(check, tmp_path).stdout
    assert victim.read_text() == "the host's own\n"


def test_the_nfs_mount_is_made_nosymfollow_and_its_st_dev_recorded():
    s = attach_script(Attach.model_validate({"nfs": {"server": "filer", "export": "/vol/bench"}}), "/run/x/m")
    assert "mount -o remount,bind,nosuid,nodev,noexec,nosymfollow" in s and "flagged ||" in s
    assert 'echo "ident $M/$F dev=$(stat -c %d "$M")"' in s
    out = "device /run/x/m/protolab.dat\nident /run/x/m/protolab.dat dev=51\n"
    a = Attacher(FakeRunner({("ssh",): lambda argv: Completed(tuple(argv), 0, out, "")}), "k").attach(
        SSH, "filer", Attach.model_validate({"nfs": {"server": "filer", "export": "/vol/bench"}}),
        allow_overwrite=True)
    assert a.idents == ("/run/x/m/protolab.dat dev=51",) and a.record()["identity"] == list(a.idents)


def test_each_run_logs_in_through_an_iscsi_iface_of_its_own():
    one, two = attach_iscsi.iface("0123456789abcdef"), attach_iscsi.iface("fedcba9876543210")
    assert one == "protolab-0123456789abcdef" and one != two and len(one) < 65  # open-iscsi's ISCSI_MAX_IFACE_LEN
    a, d = attach_script(ISCSI, "", "0123456789abcdef"), detach_script(ISCSI, "", None, "0123456789abcdef")
    assert f"I={one}" in a and f"I={one}" in d and two not in a + d
    assert "I=protolab;" not in a + d  # no iface shared by every run


def test_a_run_is_known_by_its_own_id_wherever_its_directory_moves(tmp_path):
    start = RunStart(plan={}, plan_text="", plan_format=1, provenance=Provenance())
    first = RunDir.create(tmp_path / "a", "attached", start)
    second = RunDir.create(tmp_path / "a", "attached", start)
    key = run_key(first.path)
    moved = tmp_path / "b" / first.path.name
    moved.parent.mkdir()
    first.path.rename(moved)
    assert run_key(moved) == key != run_key(second.path)
    assert len(key) == 16 and run_key(tmp_path / "not-a-run") != key


def test_an_older_protolabs_list_by_path_is_said_and_left_alone(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    (tmp_path / "run").mkdir()
    old = tmp_path / f"{hashlib.sha256(str((tmp_path / 'run').resolve()).encode()).hexdigest()[:16]}.json"
    old.write_text('[[0, "one", null]]')
    notes: list[str] = []
    progress = Silent()
    progress.note = notes.append  # type: ignore[method-assign]
    runner = FakeRunner()
    plan = load_plan_text(Path(__file__).with_name("test_attaching.py").read_text().split('PLAN = """')[1]
                          .split('"""')[0])
    assert Attachments(plan, runner, progress).up(tmp_path / "run") == 0
    assert runner.calls == [] and old.exists()  # nothing detached by an older list's names
    assert notes and notes[0].startswith(f"{old} lists what an older protolab attached for this run")


def test_a_check_is_one_script_per_host_and_a_changed_target_stops_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    plan = load_plan_text(Path(__file__).with_name("test_attaching.py").read_text().split('PLAN = """')[1]
                          .split('"""')[0])
    seen = []

    def host(argv):
        seen.append(argv[-2])
        if "--login" in argv[-1]:
            return Completed(tuple(argv), 0, "device /dev/sda\nident /dev/sda 8:0 ino=1 wwid=naa.1\n", "")
        if "same /dev/sda" in argv[-1] and argv[-2] == "root@esx2":
            return Completed(tuple(argv), CHANGED, "error /dev/sda is no longer the disk this run attached "
                             "(attached: 8:0 ino=1 wwid=naa.1; now: 8:0 ino=9 wwid=naa.2)\n", "")
        return Completed(tuple(argv), 0, "", "")

    bed = Attachments(plan, FakeRunner({("ssh",): host}), Silent())
    (tmp_path / "run").mkdir()
    bed.up(tmp_path / "run")
    a = plan.configurations[0]
    bed.ensure(a)
    seen.clear()
    with pytest.raises(ToolError) as e:
        bed.check(a)
    assert seen == ["root@esx1", "root@esx2"]  # one round trip per host
    assert str(e.value) == ("host esx2: target one: /dev/sda is no longer the disk this run attached (attached: 8:0 "
                            "ino=1 wwid=naa.1; now: 8:0 ino=9 wwid=naa.2); the run stops here, before its next "
                            "window: nothing more is written to it")
    assert isinstance(bed.done[(0, "one")], Attached)
    bed.down()
