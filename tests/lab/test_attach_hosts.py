"""Issue 21's test bed: a load guest reached over ssh stands for a user's host, and protolab attaches the storage
server guest's kernel targets on it — NVMe/TCP with 2 I/O queues, iSCSI with 1 and with 4 sessions, NFSv3 and
NFSv4.1 with nconnect 2 from its knfsd — measures through them, records what the guest's kernel reports, and
detaches them all: after the run, after a SIGTERM in the middle of one, and with `protolab detach` after a
SIGKILL (of the run directory, moved: a run is known by its own id). Then issue 40's steps (attach_identity.py):
an NFS data file swapped for a link and a device name that names another disk stop the run before the next window,
nothing written; a reused NVMe controller name and another run's iSCSI session survive `protolab detach`. Last, the
same guest attaches Samba's share (attach_smb.py: a root-only credentials file; one with mode 0644 and a wrong
password each refused in one line). Between the two, issue 45's cache step (attach_caches.py): a buffered read of
the attached NFS export again is served by the guest's page cache, and `drop_caches` makes each window's first pass
reach knfsd, seen in the server guest's tap counter.

Two TCG guests: the server guest (nvmet-tcp and LIO on the pool's exports, granting one host NQN and one initiator
IQN) in the storage namespace; the "user's host" in host 0's namespace, with dropbear, iscsiadm/iscsid and
nvme-cli and no attach of its own. Its administrator's part — the host's NQN and initiator name, iscsid running —
is done over ssh before protolab runs, as it would be on a real host. Before protolab runs, the same guests
serve test_kernel_nvme.py's checks: `doctor --hosts` over ssh, and the storage port's counters against a capture
and the NVMe/TCP wire model (the lab's link has offloads off).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import attach_caches
import attach_identity as i40
import attach_smb
import pytest
from test_kernel_nvme import doctor_over_ssh, frames_match_the_capture_and_the_model
from test_vm_guest import guest_image

from conftest import FIO, sh, spec
from protolab.engine.targets import resolve
from protolab.lab.names import GUEST_SLOTS
from protolab.lab.procs import alive
from protolab.proc import SubprocessRunner
from protolab.run.attachments import run_key
from protolab.run.sessionmark import SessionMark
from protolab.telemetry.cgroups import RoleCgroups
from protolab.vm.accel import free_port
from protolab.vm.guestssh import GuestSsh
from protolab.vm.kernelpaths import load_guest, server_guest

pytestmark = pytest.mark.lab
HOSTNQN = "nqn.2014-08.org.example:user-host-1"
INITIATOR = "iqn.2026-11.org.example:user-host-1"
STRANGER = "iqn.2026-11.org.example:stranger"  # named by no access list
STRANGER_NQN = "nqn.2014-08.org.example:stranger"


def _plan(lab, ssh: GuestSsh, duration: str) -> str:
    addr = lab.names.server_guest_address(0)
    return f"""
name = "attached"
baseline = "nvme"
workloads = ["tr3808-4k"]
load_points = [{{ streams = 4, oio = 2 }}]
[[hosts]]
name = "guest"
agent = "ssh://root@127.0.0.1:{ssh.port}"
fio = "/bin/fio"
fio_port = 18765
[[configurations]]
name = "nvme"
target = "flash"
ioengine = "libaio"
[[configurations]]
name = "iscsi-1"
target = "lun1"
ioengine = "libaio"
[[configurations]]
name = "iscsi-4"
target = "lun4"
ioengine = "libaio"
[[configurations]]
name = "nfs-4.1"
target = "filer41"
ioengine = "libaio"
[[configurations]]
name = "nfs-3"
target = "filer3"
ioengine = "libaio"
[targets.filer41]
attach = {{ nfs = {{ server = "{addr}", export = "/export", version = "4.1", nconnect = 2, rsize = 65536 }} }}
allow_overwrite = true
[targets.filer3]
attach = {{ nfs = {{ server = "{addr}", export = "/export", version = "3", nconnect = 2 }} }}
allow_overwrite = true
[targets.flash]
attach = {{ nvme-tcp = {{ address = "{addr}", nqn = "{lab.names.nqn}", queues = 2 }} }}
allow_overwrite = true
[targets.lun1]
attach = {{ iscsi = {{ portal = "{addr}", iqn = "{lab.names.lio_iqn}", sessions = 1 }} }}
allow_overwrite = true
[targets.lun4]
attach = {{ iscsi = {{ portal = "{addr}:3260", iqn = "{lab.names.lio_iqn}", sessions = 4 }} }}
allow_overwrite = true
[method]
prepare = false
warmup = "0s"
duration = "{duration}"
repeats = 1
data_size = "16M"
"""


def _ssh(lab, keys, ssh: GuestSsh, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", lab.names.host_ns(0), "ssh", "-n", "-F", str(keys / "ssh_config"),
                           "-p", str(ssh.port), "root@127.0.0.1", script], capture_output=True, text=True, timeout=60)


def _left(lab, keys, ssh) -> str:
    """What of an attach is left in the guest: sessions, node records, protolab's ifaces, controllers, NFS mounts and
    mount points."""
    p = _ssh(lab, keys, ssh, "ls /sys/class/iscsi_session /sys/class/nvme 2>/dev/null; iscsiadm -m node 2>&1 | "
                             "grep -v 'No records'; iscsiadm -m iface 2>/dev/null | grep '^protolab'; "
                             "grep ' nfs' /proc/mounts; ls /run/protolab-attach; echo end")
    assert p.returncode == 0 and p.stdout.strip().endswith("end"), p.stderr
    return "".join(ln for ln in p.stdout.splitlines(keepends=True) if ln.strip() not in ("", "end") and
                   not ln.startswith("/sys/class/"))


def _strangers_are_refused(lab, keys, ssh: GuestSsh) -> None:
    """The kernel-paths issue's access lists: the server guest's nvmet, LIO and knfsd each refuse a host they do not
    name — the load guest with a host NQN, an initiator IQN and a source address that were not granted — and
    nothing of the attempts is left in the guest."""
    addr, nqn, iqn = lab.names.server_guest_address(0), lab.names.nqn, lab.names.lio_iqn
    nvme = _ssh(lab, keys, ssh, f"nvme connect -t tcp -a {addr} -s 4420 -n {nqn} -q {STRANGER_NQN} 2>&1; "
                                "echo exit=$?; ls /sys/class/nvme")
    assert "exit=0" not in nvme.stdout and "nvme" not in nvme.stdout.split("exit=")[1], (nvme.stdout, nvme.stderr)
    lio = _ssh(lab, keys, ssh, "I=stranger; iscsiadm -m iface -I $I -o new >/dev/null && "
                               f"iscsiadm -m iface -I $I -o update -n iface.initiatorname -v {STRANGER} >/dev/null && "
                               f"iscsiadm -m node -o new -T {iqn} -p {addr}:3260 -I $I >/dev/null && "
                               f"iscsiadm -m node -T {iqn} -p {addr}:3260 -I $I --login 2>&1; echo exit=$?; "
                               f"iscsiadm -m node -T {iqn} -p {addr}:3260 -I $I -o delete; "
                               "iscsiadm -m iface -I $I -o delete")
    assert "authorization failure" in lio.stdout and "exit=0" not in lio.stdout, (lio.stdout, lio.stderr)
    # knfsd: the same guest from an address the export does not list (a source address for the server alone)
    other = lab.names.load_guest_address(0, GUEST_SLOTS - 1)
    ns, tap = lab.names.host_ns(0), lab.names.tap("g0")  # the lab routes each guest address: this one too, a while
    sh(["ip", "route", "replace", f"{other}/32", "dev", tap], netns=ns, check=True)
    try:
        nfs = _ssh(lab, keys, ssh, f"ip addr add {other}/24 dev eth1 && ip route add {addr}/32 dev eth1 src {other} "
                                   f"&& mkdir -p /mnt/stranger && busybox timeout 40 mount.nfs {addr}:/export "
                                   "/mnt/stranger -o vers=4.1,retry=0 2>&1; echo exit=$?; umount /mnt/stranger "
                                   f"2>/dev/null; rmdir /mnt/stranger; ip route del {addr}/32 dev eth1; ip addr del "
                                   f"{other}/24 dev eth1")
    finally:
        sh(["ip", "route", "del", f"{other}/32", "dev", tap], netns=ns)
    assert "access denied" in nfs.stdout and "exit=0" not in nfs.stdout, (nfs.stdout, nfs.stderr)
    assert _left(lab, keys, ssh) == ""
    print(f"\nrefused: nvmet {nvme.stdout.split('exit=')[0].strip()[-80:]!r}; LIO "
          f"{lio.stdout.split('exit=')[0].strip()[-80:]!r}; knfsd {nfs.stdout.split('exit=')[0].strip()[-80:]!r}")


def _one_pool_two_servers(lab, server, keys, ssh: GuestSsh, tmp_path) -> None:
    """The kernel-paths issue's shared pool: what the load guest's kernel writes through LIO (the server guest's
    disk of the pool's iSCSI volume) reads back, checksums and headers, through tgt on that same volume (fio's
    libiscsi on this machine); what it writes through nvmet reads back from the pool's NVMe/TCP volume's file;
    what its NFS client writes through knfsd reads back from the knfsd volume's ext4, mounted here."""
    addr, iqn = lab.names.server_guest_address(0), lab.names.lio_iqn
    job = "--rw=write --bs=64k --offset=4m --size=1m --verify=crc32c --randseed=7"
    node = f"-m node -T {iqn} -p {addr}:3260"
    w = _ssh(lab, keys, ssh, f"iscsiadm {node} -o new >/dev/null && iscsiadm {node} --login >/dev/null && sleep 1 && "
                             "D=$(ls /sys/class/iscsi_session/session*/device/target*/*:*/block | grep '^sd' | head -1) "
                             f"&& fio --name=pool --filename=/dev/$D {job} --direct=1 --do_verify=0 --end_fsync=1 "
                             f"--output-format=terse >/dev/null; echo exit=$?; iscsiadm {node} --logout >/dev/null; "
                             f"iscsiadm {node} -o delete")
    assert "exit=0" in w.stdout, (w.stdout, w.stderr)
    assert _left(lab, keys, ssh) == ""
    filename = resolve(lab.endpoint("iscsi", host=0).url, size=64 << 20, ioengine=None, direct=True).filename
    read = _verified(tmp_path / "pool.fio", "libiscsi", filename, job, netns=lab.names.host_ns(0))
    assert read == 1 << 20, read  # every block read back through tgt and checked
    print(f"\nwritten through LIO by the guest's kernel, {read} B verified through tgt: one pool")
    # and through nvmet: what the guest's nvme-tcp writes is in the pool's NVMe/TCP volume, read as a file here
    nqn = lab.names.nqn
    w = _ssh(lab, keys, ssh, f"nvme connect -t tcp -a {addr} -s 4420 -n {nqn} >/dev/null && sleep 1 && "
                             "D=$(ls /sys/block | grep -E '^nvme[0-9]+n1$') && "
                             f"fio --name=pool --filename=/dev/$D {job} --direct=1 --do_verify=0 --end_fsync=1 "
                             f"--output-format=terse >/dev/null; echo exit=$?; nvme disconnect -n {nqn} >/dev/null")
    assert "exit=0" in w.stdout and _left(lab, keys, ssh) == "", (w.stdout, w.stderr)
    assert _verified(tmp_path / "file.fio", "psync", str(lab.export_file("nvme-tcp")), job) == 1 << 20
    # and through knfsd: what the guest's NFS client writes is in the pool's knfsd volume (its ext4 image), read
    # here once the server guest has let go of it as it does for a restore (quiesce), then taken back (resume)
    w = _ssh(lab, keys, ssh, f"mkdir -p /mnt/pool && mount.nfs {addr}:/export /mnt/pool -o vers=4.1 && "
                             f"fio --name=pool --filename=/mnt/pool/protolab.dat {job} --direct=1 --do_verify=0 "
                             "--end_fsync=1 --output-format=terse >/dev/null; echo exit=$?; umount /mnt/pool; "
                             "rmdir /mnt/pool")
    assert "exit=0" in w.stdout and _left(lab, keys, ssh) == "", (w.stdout, w.stderr)
    volume = lab.knfsd_volume
    assert server.spec.stat.tell("quiesce", timeout=60) == "ok quiesce"
    volume.hold()
    try:
        assert _verified(tmp_path / "knfsd.fio", "psync", str(volume.data), job) == 1 << 20
    finally:
        volume.release()
    assert server.spec.stat.tell("resume", timeout=60) == "ok resume"
    print("written through knfsd by the guest's NFS client, verified in the pool's knfsd volume; quiesced, resumed")


def _verified(jobfile: Path, engine: str, filename: str, job: str, netns: str | None = None) -> int:
    """Bytes fio read back from ``filename`` checking ``job``'s crc32c headers (verify_only); fio's failure, raised."""
    jobfile.write_text(f"[pool]\nioengine={engine}\nfilename={filename}\n"
                       + "".join(f"{o[2:]}\n" for o in job.split()) + "verify_only=1\n")
    r = sh([str(FIO), "--output-format=json", str(jobfile)], netns=netns, timeout=60)
    out = r.stdout.decode()
    assert r.returncode == 0 and '"verify' not in r.stderr.decode(), (out[-800:], r.stderr)
    return json.loads(out[out.index("{"):])["jobs"][0]["read"]["io_bytes"]


def _once_attached(run: subprocess.Popen, results: Path) -> list[dict]:
    """What the manifest lists as attached once the running ``run`` has recorded its first attach."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None:
        m = next(results.glob("*/manifest.json"), None)
        if m is not None and json.loads(m.read_text() or "{}").get("attached"):  # the controller is connected
            return json.loads(m.read_text())["attached"]
        time.sleep(0.5)
    raise AssertionError(run.communicate() if run.poll() is not None else "no attach recorded in 300 s")


def _protolab(lab, keys, args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200", "PROTOLAB_SSH_CONFIG": str(keys / "ssh_config")}
    return subprocess.Popen(["ip", "netns", "exec", lab.names.host_ns(0), sys.executable, "-m", "protolab.cli",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def test_protolab_attaches_measures_and_detaches_on_a_users_host_over_ssh(make_lab, tmp_path):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86 (make deps)")
    image = guest_image()
    assert {"iscsiadm", "iscsid", "nvme", "mount.nfs", "rpc.nfsd"} <= set(image.info.get("tools", [])), \
        "the guest image has no initiator tools: run scripts/install-deps.sh again"
    assert shutil.which("smbd"), "no Samba for the SMB step: run scripts/install-deps.sh again"
    # every packet a frame, as captured; knfsd exports the pool's knfsd volume (server_guest takes it from this host)
    lab = make_lab(spec(link={"offloads": False}), {"nvme-tcp", "iscsi"}, knfsd=True)
    server = server_guest(lab, image, {"nvmet": [HOSTNQN], "lio": [INITIATOR],
                                       "knfsd": [lab.names.load_guest_address(0, 0)]},
                          mtu=lab.link.mtu, fio_port=free_port())
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id")], check=True, timeout=30)
    (keys / "ssh_config").write_text(f"Host *\n  IdentityFile {keys / 'id'}\n  StrictHostKeyChecking no\n"
                                     "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    ssh = GuestSsh(free_port(), (keys / "id.pub").read_text())
    # 2 vCPUs: nvme-tcp gives a host at most one I/O queue per CPU
    host = load_guest(lab, image, f"{lab.spec.prefix}-h1vm", 0, None, vcpus=2, fio_port=free_port(), ssh=ssh)
    started: list[subprocess.Popen] = []

    def go(args: list[str]) -> subprocess.Popen:
        started.append(_protolab(lab, keys, args))
        return started[-1]

    served = attach_smb.serve(lab)  # Samba for the SMB step: the same guest attaches its share
    try:
        booted = time.monotonic()
        server.start()
        host.start()
        server.wait_ready(timeout=180)
        host.wait_ready(timeout=240)
        t0 = time.monotonic()
        print(f"\nboth guests ready in {t0 - booted:.0f} s")
        t = time.monotonic()
        assert _ssh(lab, keys, ssh, "true").returncode == 0
        print(f"\none ssh command to the guest: {time.monotonic() - t:.1f} s")
        admin = _ssh(lab, keys, ssh, f"mkdir -p /etc/nvme /etc/iscsi /run/lock/iscsi && echo {HOSTNQN} > "
                                     f"/etc/nvme/hostnqn && echo InitiatorName={INITIATOR} > "
                                     "/etc/iscsi/initiatorname.iscsi && iscsid && echo ok")
        assert admin.stdout.strip() == "ok", (admin.stdout, admin.stderr, host.console_text()[-2000:])

        # the same guests for the kernel-paths issue's wire check and `doctor --hosts` (test_kernel_nvme.py)
        doctor_over_ssh(lab, image, ssh, keys, tmp_path)
        print(f"{time.monotonic() - t0:.0f} s: doctor --hosts")
        addr, nqn = lab.names.server_guest_address(0), lab.names.nqn
        c = _ssh(lab, keys, ssh, f"nvme connect -t tcp -a {addr} -s 4420 -n {nqn} -i 2 >/dev/null && sleep 1 && "
                                 "ls /sys/block | grep -E '^nvme[0-9]+n1$'")
        try:
            assert c.returncode == 0 and c.stdout.strip().startswith("nvme"), (c.stdout, c.stderr)
            name = c.stdout.split()[0]

            def reads() -> int:
                """The reads the guest's block layer completed on the namespace: its path device's (native NVMe
                multipath counts on nvmeXcYnZ, its head nvmeXnZ counts none) or its own, whichever counted more."""
                stat = _ssh(lab, keys, ssh, f"cat /sys/block/{name}/stat /sys/class/nvme/*/nvme*c*n1/stat 2>/dev/null")
                assert stat.stdout.strip(), stat.stderr
                return max(int(line.split()[0]) for line in stat.stdout.splitlines() if line.strip())

            frames_match_the_capture_and_the_model(lab, host, tmp_path, f"/dev/{name}", reads)
        finally:
            gone = _ssh(lab, keys, ssh, f"nvme disconnect -n {nqn}")
        assert gone.returncode == 0 and _left(lab, keys, ssh) == "", (gone.stdout, gone.stderr)
        print(f"{time.monotonic() - t0:.0f} s: the wire check")
        _strangers_are_refused(lab, keys, ssh)
        print(f"{time.monotonic() - t0:.0f} s: strangers refused")
        _one_pool_two_servers(lab, server, keys, ssh, tmp_path)
        print(f"{time.monotonic() - t0:.0f} s: one pool")

        plan = tmp_path / "attached.toml"
        plan.write_text(_plan(lab, ssh, "2s"))
        run = go(["run", str(plan), "--results", str(tmp_path / "r")])
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err + out
        rundir = next((tmp_path / "r").iterdir())
        manifest = json.loads((rundir / "manifest.json").read_text())
        got = {a["target"]: a for a in manifest["attached"]}
        assert set(got) == {"flash", "lun1", "lun4", "filer41", "filer3"}, got
        assert {a["host"] for a in got.values()} == {"guest"}, got
        # found by identifiers: the NQN's namespace; one SCSI disk per session of the IQN's LUN 0
        assert len(got["flash"]["devices"]) == 1 and got["flash"]["devices"][0].startswith("/dev/nvme"), got
        assert "tcp traddr=" in got["flash"]["kernel"] and "2 I/O queues" in got["flash"]["kernel"], got["flash"]
        assert len(got["lun1"]["devices"]) == 1 and len(got["lun4"]["devices"]) == 4, got
        assert all(d.startswith("/dev/sd") for d in got["lun4"]["devices"])
        assert got["lun4"]["kernel"].count("iSCSI Session State: LOGGED_IN") == 4, got["lun4"]["kernel"]
        # NFS as the guest's /proc/mounts says: the version and nconnect asked, the export's file as the target
        for key, vers in (("filer41", "vers=4.1"), ("filer3", "vers=3")):
            assert vers in got[key]["kernel"] and "nconnect=2" in got[key]["kernel"], got[key]
            assert got[key]["devices"][0].startswith("/run/protolab-attach/") and \
                got[key]["devices"][0].endswith("/protolab.dat"), got[key]
        assert "rsize=65536" in got["filer41"]["kernel"]
        rows = list(csv.DictReader((rundir / "cells.csv").open()))
        assert {r["configuration"] for r in rows} == {"nvme", "iscsi-1", "iscsi-4", "nfs-4.1", "nfs-3"}
        assert all(float(r["iops"]) > 0 and r["errors"] == "0" for r in rows), rows
        report = (rundir / "report.md").read_text()
        assert "Attached on the hosts" in report and got["lun4"]["devices"][3] in report, report
        assert _left(lab, keys, ssh) == ""  # no session, node record, controller or mount is left
        print(f"\n{time.monotonic() - t0:.0f} s; attached over ssh: {[(k, a['devices']) for k, a in got.items()]}; "
              f"{[(r['configuration'], round(float(r['iops']))) for r in rows]}")
        attach_caches.a_second_read_reaches_the_server_only_after_a_drop(
            lab, lambda script: _ssh(lab, keys, ssh, script), go, ssh, free_port(), tmp_path)
        assert _left(lab, keys, ssh) == ""
        print(f"{time.monotonic() - t0:.0f} s: the page cache dropped over ssh")

        # a SIGTERM in the middle of a run detaches too (the NVMe/TCP configuration alone, for time)
        text = _plan(lab, ssh, "20s")
        plan.write_text(text[:text.index('[[configurations]]\nname = "iscsi-1"')] + text[text.index("[targets.filer41]"):])
        run = go(["run", str(plan), "--results", str(tmp_path / "t")])
        attached_then = _once_attached(run, tmp_path / "t")
        assert [a["target"] for a in attached_then] == ["flash"]
        os.killpg(run.pid, signal.SIGTERM)
        out, err = run.communicate(timeout=180)
        assert run.returncode != 0 and "resume" in err, (run.returncode, err)
        assert _left(lab, keys, ssh) == ""
        key = run_key(next((tmp_path / "t").iterdir()))
        assert not (Path("/run/protolab/attached") / f"{key}.json").exists()  # nothing left listed to detach
        lists = Path("/run/protolab/attached")
        assert not lists.exists() or any(lists.iterdir()), "an empty list folder was left in /run/protolab"
        print(f"{time.monotonic() - t0:.0f} s: the SIGTERM run detached")

        # a run killed outright leaves its attach, listed; `protolab detach` of it undoes that and only that
        private = set(Path("/run/protolab").glob("agents-*"))
        run = go(["run", str(plan), "--results", str(tmp_path / "k")])
        _once_attached(run, tmp_path / "k")
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate(timeout=60)
        killed: list[Path] = []
        try:
            killed.append(next((tmp_path / "k").iterdir()))
            moved = tmp_path / "moved" / killed[0].name  # detach knows a run by its own id, wherever it is
            moved.parent.mkdir()
            killed[0] = killed[0].rename(moved)
            assert "/sys/class/nvme/" in _ssh(lab, keys, ssh, "ls -d /sys/class/nvme/*").stdout  # still connected
            p = go(["detach", str(killed[0])])
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0 and "detached 1 attach(es) an earlier session left" in out, (out, err)
            assert _left(lab, keys, ssh) == "" and "/sys/class/nvme/" not in _ssh(lab, keys, ssh, "ls -d "
                                                                                     "/sys/class/nvme/*").stdout
            assert not lists.exists() or any(lists.iterdir())
            print(f"{time.monotonic() - t0:.0f} s: protolab detach undid the killed run's attach (moved)")

            # issue 40: checked by identity before every window; detach removes only what the run made
            do, base = (lambda script: _ssh(lab, keys, ssh, script)), _plan(lab, ssh, "2s")
            i40.a_link_swapped_on_the_export_writes_nothing_through_it(do, go, plan, base, tmp_path)
            print(f"{time.monotonic() - t0:.0f} s: the NFS link swap")
            i40.a_renamed_device_stops_the_run(lab, do, go, plan, base, tmp_path)
            print(f"{time.monotonic() - t0:.0f} s: the renamed iSCSI device")
            i40.a_reused_nvme_controller_name_survives_detach(lab, do, go, plan, base, tmp_path, killed)
            print(f"{time.monotonic() - t0:.0f} s: the reused NVMe name")
            i40.another_runs_iscsi_session_survives_detach(lab, do, go, plan, base, tmp_path, killed)
            assert _left(lab, keys, ssh) == ""
            print(f"{time.monotonic() - t0:.0f} s: issue 40's steps")
        finally:  # what SIGKILL left of the runs on this machine: their fio sockets' folders (made while they ran;
            # this test's alone, those of its host "guest": another lane's test may run beside it), their session
            # marks (/run/protolab/sessions), their role cgroups and, when detach failed, their lists
            for left in set(Path("/run/protolab").glob("agents-*")) - private:
                if any(p.name.startswith("guest.") for p in left.iterdir()):
                    shutil.rmtree(left, ignore_errors=True)
            for rundir in killed:
                SessionMark(rundir).clean_dead(SubprocessRunner(), lambda _: None)  # its mark, as a resume would
                RoleCgroups(f"run-{rundir.name}").remove()
                (lists / f"{run_key(rundir)}.json").unlink(missing_ok=True)
            if lists.is_dir() and not any(lists.iterdir()):
                lists.rmdir()
        attach_smb.a_share_with_a_root_only_credentials_file(lab, served, image, keys, ssh, go, tmp_path)
        print(f"{time.monotonic() - t0:.0f} s: the SMB share")
    finally:
        for p in started:  # a protolab the test gave up on (a timeout, a failed check) does not outlive it
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
        host.stop()
        server.stop()
        served.down()
        # a run whose teardown could not undo everything (the identity steps' runs leave what is not theirs, on
        # purpose) keeps its session mark for a resume; no resume comes here
        for manifest in tmp_path.rglob("manifest.json"):
            SessionMark(manifest.parent).path.unlink(missing_ok=True)
    for g in (host, server):
        assert g.pid is None or not alive(g.pid)
    # the taps went with QEMU (not persistent): nothing of the guests is left in the lab's namespaces
    assert sh(["ip", "link", "show", "dev", lab.names.tap("st")], netns=lab.names.storage_ns).returncode != 0
    assert sh(["ip", "link", "show", "dev", lab.names.tap("g0")], netns=lab.names.host_ns(0)).returncode != 0
