"""Attach and detach on a host (run.attaching, run.attachments, run.hostshell) against a fake shell: what each
outcome of the host's script becomes, that plan values reach it only quoted, and that a run detaches what it
attached — taking turns on one storage, and after a killed session. The real scripts run in
tests/lab/test_attach_hosts.py (guests reached over ssh)."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from protolab.errors import ProtolabError, TargetError, ToolError
from protolab.plan.attach import Attach
from protolab.plan.load import load_plan_text
from protolab.proc import Completed, FakeRunner
from protolab.results.rundir import RunDir
from protolab.run import attachments as attachments_mod
from protolab.run.attaching import Attacher, attach_script, detach_script, same_storage
from protolab.run.attachments import Attachments, detach_left
from protolab.run.hostshell import HostShell
from protolab.run.progress import Silent

NVME = Attach.model_validate({"nvme-tcp": {"address": "10.1.2.5", "nqn": "nqn.2014-08.org.example:flash",
                                           "queues": 4}})
ISCSI = Attach.model_validate({"iscsi": {"portal": "10.1.2.3:3260", "iqn": "iqn.2001-05.com.example:array",
                                         "sessions": 2}})
NFS = Attach.model_validate({"nfs": {"server": "filer", "export": "/vol/bench", "version": 3, "nconnect": 4}})
SSH = HostShell("esx1", ("ssh", "-n", "-p", "2222", "root@esx1"), "root@esx1", True)

PLAN = """
name = "attached"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ hosts = 2, streams = 2 }]
[[hosts]]
name = "esx1"
agent = "ssh://root@esx1:2222"
[[hosts]]
name = "esx2"
agent = "ssh://root@esx2"
[[configurations]]
name = "a"
target = "one"
[[configurations]]
name = "b"
target = "four"
[targets.one]
attach = { iscsi = { portal = "10.1.2.3", iqn = "iqn.2001-05.com.example:array", sessions = 1 } }
allow_overwrite = true
[targets.four]
attach = { iscsi = { portal = "10.1.2.3", iqn = "iqn.2001-05.com.example:array", sessions = 4 } }
allow_overwrite = true
"""


@pytest.mark.parametrize("attach", [NVME, ISCSI, NFS], ids=["nvme-tcp", "iscsi", "nfs"])
def test_scripts_are_valid_sh_and_hold_plan_values_only_quoted(attach):
    for n, s in enumerate((attach_script(attach, "/run/protolab-attach/0123456789abcdef"),
                           detach_script(attach, "/run/protolab-attach/0123456789abcdef"))):
        p = subprocess.run(["sh", "-n", "-c", s], capture_output=True, text=True, timeout=10)
        assert p.returncode == 0, p.stderr
        # every plan value is assigned once, on the variables line, and used as "$VAR" after it
        values = [v for v in (getattr(attach.spec, k, None) for k in ("iqn", "nqn", "export", "server", "address"))
                  if isinstance(v, str)]
        for v in values:
            lines = [ln for ln in s.splitlines() if v in ln]
            assert len(lines) == (1 if n == 0 else len(lines[:1])), (v, lines)  # NFS's detach needs no export
            assert all("=" in ln and shlex.split(ln) for ln in lines), (v, lines)


def test_nfs_v3_mounts_without_the_lock_manager_and_the_plan_options():
    s = attach_script(NFS, "/run/protolab-attach/x")
    assert "O=vers=3,nconnect=4,nosuid,nodev,noexec,nolock;" in s and "SRC=filer:/vol/bench;" in s


def _answer(stdout: str, code: int = 0):
    return lambda argv: Completed(tuple(argv), code, stdout, "")


def test_an_attach_gives_the_devices_the_kernel_account_and_a_queue_shortfall():
    out = ("id nvme0 cntlid=1 ino=901 subsysnqn=nqn.2014-08.org.example:flash hostnqn=nqn.h address=traddr=10.1.2.5\n"
           "device /dev/nvme0n1\nkernel nvme0: tcp traddr=10.1.2.5,trsvcid=4420, 2 I/O queues, state live\n"
           "ident /dev/nvme0n1 259:0 ino=4711 wwid=eui.0123 serial=abc subsysnqn=nqn.2014-08.org.example:flash\n"
           "found /dev/nvme0n1 no signature\n")
    runner = FakeRunner({("ssh",): _answer(out)})
    a = Attacher(runner, "run1").attach(SSH, "flash", NVME, allow_overwrite=True)
    assert a.devices == ("/dev/nvme0n1",)
    assert "2 I/O queues" in a.kernel
    assert a.found[-1] == "the kernel gave 2 of the 4 I/O queues asked (nvme-tcp makes at most one per CPU of the host)"
    assert runner.calls[0][0][:5] == ("ssh", "-n", "-p", "2222", "root@esx1")
    assert runner.calls[0][0][5].startswith("sh -c ")  # the host's login shell only starts sh
    assert a.ids == ("nvme0 cntlid=1 ino=901 subsysnqn=nqn.2014-08.org.example:flash hostnqn=nqn.h "
                     "address=traddr=10.1.2.5",)
    assert a.idents == ("/dev/nvme0n1 259:0 ino=4711 wwid=eui.0123 serial=abc "
                        "subsysnqn=nqn.2014-08.org.example:flash",)
    # a device the attach could not identify is never used: detached again, said in one line
    runner = FakeRunner({("ssh",): _answer(out.replace("ident /dev/nvme0n1 259:0 ino=4711", "ident /dev/nvme0n1 gone"))})
    with pytest.raises(ToolError, match="cannot tell the device's identity.*/dev/nvme0n1: no identity"):
        Attacher(runner, "run1").attach(SSH, "flash", NVME, allow_overwrite=True)
    assert "nvme disconnect -d" in runner.calls[-1][0][-1]


def test_nvme_detach_deletes_only_the_controllers_it_connected():
    me = "nvme3 cntlid=1 ino=901 subsysnqn=nqn.x hostnqn=nqn.h address=traddr=10.1.2.5,trsvcid=4420"
    s = detach_script(NVME, "", (me,))
    assert f"C='{me}'" in s and 'nvme disconnect -d "$c"' in s and "disconnect -n" not in s
    assert "C=$(ours)" not in detach_script(NVME, "", None)  # not known: never every controller of the NQN
    assert "C=''" in detach_script(NVME, "", ("nvme1; reboot",))  # ids are controller records or nothing
    assert "C=''" in detach_script(NVME, "", ("nvme1",))  # an older list's bare name: never acted on


def test_a_target_the_host_has_already_is_refused_and_left_alone():
    runner = FakeRunner({("ssh",): _answer("error already logged in to iqn.2001-05.com.example:array (session1 )\n",
                                           3)})
    with pytest.raises(ToolError, match="host esx1: target a .*already logged in.*only its own"):
        Attacher(runner, "run1").attach(SSH, "a", ISCSI, allow_overwrite=True)
    assert len(runner.calls) == 1  # no detach: the session is the user's


def test_a_failed_attach_is_undone_and_said_in_one_line():
    scripts = []

    def host(argv):
        scripts.append(argv[-1])
        if len(scripts) == 1:
            return Completed(tuple(argv), 4, "error iscsiadm -m node: iscsiadm: Login failed (authorization)\n", "")
        return Completed(tuple(argv), 0, "", "")

    with pytest.raises(ToolError) as e:
        Attacher(FakeRunner({("ssh",): host}), "run1").attach(SSH, "a", ISCSI, allow_overwrite=True)
    assert str(e.value).count("\n") == 0 and "Login failed (authorization)" in str(e.value)
    assert "--logout" in scripts[1] and "-o delete" in scripts[1]


def test_an_nfs_file_that_holds_data_needs_the_opt_in():
    out = "device /run/protolab-attach/x/protolab.dat\nident /run/protolab-attach/x/protolab.dat dev=44\n" \
          "found /run/protolab-attach/x/protolab.dat holds 4096 bytes protolab did not write\n"
    runner = FakeRunner({("ssh",): _answer(out)})
    with pytest.raises(TargetError, match="holds 4096 bytes.*allow_overwrite = true"):
        Attacher(runner, "run1").attach(SSH, "filer", NFS, allow_overwrite=False)
    assert "umount" in runner.calls[-1][0][-1]  # unmounted again
    assert Attacher(FakeRunner({("ssh",): _answer(out)}), "run1").attach(SSH, "filer", NFS, allow_overwrite=True)


def test_an_unreachable_host_at_detach_is_named_with_the_command_to_run_there():
    runner = FakeRunner({("ssh",): lambda argv: Completed(tuple(argv), 255, "", "ssh: connect to host esx1 port "
                                                                                 "2222: No route to host")})
    with pytest.raises(ToolError) as e:
        Attacher(runner, "run1", sleep=lambda s: None).detach(SSH, "flash", NVME)
    assert len(runner.calls) == 3  # tried three times
    msg = str(e.value)
    assert msg.startswith("host esx1: ssh failed (ssh: connect to host esx1 port 2222: No route to host)")
    by_hand = msg.split("detach target flash there: ", 1)[1]
    assert by_hand.startswith("ssh -p 2222 root@esx1 ")
    # the command given is the detach itself, one line that sh reads as written
    words = shlex.split(by_hand)
    assert words[:4] == ["ssh", "-p", "2222", "root@esx1"] and "\n" not in by_hand
    sh, c, inner = shlex.split(words[4])
    assert (sh, c) == ("sh", "-c") and "nvme disconnect -d" in inner
    assert subprocess.run(["sh", "-n", "-c", inner], capture_output=True, timeout=10).returncode == 0


def test_same_storage_is_the_iqn_at_the_portal_the_nqn_or_the_export():
    other = Attach.model_validate({"iscsi": {"portal": "10.1.2.3", "iqn": "iqn.2001-05.com.example:array"}})
    assert same_storage(ISCSI, other) and not same_storage(ISCSI, NVME) and same_storage(NFS, NFS)


def test_a_run_attaches_on_each_host_takes_turns_on_one_storage_and_detaches_all(tmp_path, monkeypatch):
    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    log: list[str] = []

    def host(argv):
        where, script = argv[-2], argv[-1]
        sessions = script.split("S=", 1)[1].split(";")[0] if "S=" in script else "?"
        if "--login" in script:
            log.append(f"attach {where} {sessions}")
            n = int(sessions)
            return Completed(tuple(argv), 0, "".join(f"device /dev/sd{'abcd'[i]}\nident /dev/sd{'abcd'[i]} 8:{16 * i} "
                                                     f"ino={i + 1} wwid=naa.1\n" for i in range(n)), "")
        log.append(f"detach {where}")
        return Completed(tuple(argv), 0, "", "")

    plan = load_plan_text(PLAN)
    bed = Attachments(plan, FakeRunner({("ssh",): host}), Silent())
    seen = []
    bed.on_attached = seen.append
    (tmp_path / "run").mkdir()
    bed.up(tmp_path / "run")
    a, b = plan.configurations
    assert bed.access(a, 1, 1, 1 << 20).filename == "/dev/sda"
    assert log == ["attach root@esx1 1", "attach root@esx2 1"]
    assert bed.access(b, 0, 3, 1 << 20).filename == "/dev/sdd"  # stream 3 of 4 sessions' disks
    assert log[2:] == ["detach root@esx1", "attach root@esx1 4", "detach root@esx2", "attach root@esx2 4"]
    state = next(tmp_path.glob("*.json"))
    assert state.read_text().count('"four"') == 2
    assert [r["target"] for r in seen[-1]] == ["one", "one", "four", "four"]  # each attach's latest account
    bed.down()
    assert log[6:] == ["detach root@esx1", "detach root@esx2"] and not state.exists()


def test_a_resumed_run_first_detaches_what_a_killed_session_left(tmp_path, monkeypatch):
    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    runner = FakeRunner()
    plan = load_plan_text(PLAN)
    first = Attachments(plan, runner, Silent())
    (tmp_path / "run").mkdir()
    first.up(tmp_path / "run")
    first._list((0, "four"), None)  # what a SIGKILLed session left listed
    first._list((1, "four"), None)
    again = Attachments(plan, runner, Silent())
    runner.calls.clear()
    again.up(tmp_path / "run")
    assert [c[0][-2] for c in runner.calls] == ["root@esx1", "root@esx2"]
    assert all("--logout" in c[0][-1] for c in runner.calls)
    assert not list(tmp_path.glob("*.json"))  # all detached: the list is gone


def test_a_session_still_running_holds_its_run_and_detach_undoes_only_what_a_killed_one_listed(tmp_path,
                                                                                                monkeypatch):
    """`protolab detach` detaches nothing under a session of the run that is still going (it holds the run
    directory); after a kill, `detach` logs out what was listed, on each host, once, and leaves nothing listed."""
    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    runner = FakeRunner()
    plan = load_plan_text(PLAN)
    run = tmp_path / "run"
    run.mkdir()
    session = RunDir(run)
    session.hold()
    first = Attachments(plan, runner, Silent())
    assert first.up(run) == 0
    first._list((0, "four"), None)
    first._list((1, "one"), ("7",))
    runner.calls.clear()
    with pytest.raises(ProtolabError, match=r"run: another protolab session of this run is still going"):
        detach_left(plan, RunDir(run), runner, Silent())
    assert runner.calls == [] and len(first.listed) == 2
    session.release()  # killed: its lock goes with its process
    assert detach_left(plan, RunDir(run), runner, Silent()) == 2
    assert [(c[0][-2], "--logout" in c[0][-1]) for c in runner.calls] == [("root@esx1", True), ("root@esx2", True)]
    assert not list(tmp_path.glob("*.json"))
    assert detach_left(plan, RunDir(run), runner, Silent()) == 0  # nothing listed any more
    (tmp_path / "link").symlink_to(run)
    for where, why in (("gone", "No such file"), ("link", "Not a directory")):
        with pytest.raises(ProtolabError, match=f"{where}: cannot open the run directory .{why}"):
            detach_left(plan, RunDir(tmp_path / where), runner, Silent())

    def unreachable(argv):
        return Completed(tuple(argv), 255, "", "ssh: connect to host esx1 port 22: No route to host\n")

    first.listed = {}
    first._list((0, "four"), None)  # one left by another kill
    runner = FakeRunner({("ssh",): unreachable})
    with pytest.raises(ToolError, match="esx1"):
        detach_left(plan, RunDir(run), runner, Silent())
    assert 1 <= len(runner.calls) <= 3  # one detach, its ssh retried; never a second round
    assert (0, "four") in first._read_state()  # still listed for the next try


def test_a_refused_attach_is_never_detached_and_an_interrupted_one_always_is(tmp_path, monkeypatch):
    """The host's own session (exit 3) leaves no entry to detach; an attach cut short (ssh timed out) stays
    listed, and down() detaches it beside those attached."""
    monkeypatch.setattr(attachments_mod, "private_dir", lambda *parts: tmp_path)
    plan = load_plan_text(PLAN)
    a, b = plan.configurations
    runner = FakeRunner({("ssh",): _answer("error already logged in to iqn.2001-05.com.example:array (session1 )\n",
                                           3)})
    bed = Attachments(plan, runner, Silent())
    (tmp_path / "run").mkdir()
    bed.up(tmp_path / "run")
    with pytest.raises(ToolError, match="already logged in"):
        bed.ensure(a)
    assert bed.listed == {} and not list(tmp_path.glob("*.json"))
    runner.calls.clear()
    bed.down()
    assert runner.calls == []  # nothing of the host's own is touched

    calls = []

    def cut(argv):
        calls.append(argv[-1])
        if "--login" in argv[-1] and "esx2" in argv[-2]:
            raise ToolError("host esx2: no answer within 120 s; check 'ssh root@esx2 true'")
        return Completed(tuple(argv), 0, "device /dev/sda\nident /dev/sda 8:0 ino=1 wwid=naa.1\n"
                         if "--login" in argv[-1] else "", "")

    bed = Attachments(plan, FakeRunner({("ssh",): cut}), Silent())
    bed.up(tmp_path / "run")  # the first bed's down() released the run
    with pytest.raises(ToolError, match="no answer"):
        bed.ensure(a)
    assert set(bed.listed) == {(0, "one"), (1, "one")} and set(bed.done) == {(0, "one")}
    calls.clear()
    bed.down()
    assert len(calls) == 2 and all("--logout" in c for c in calls) and bed.listed == {}


def test_the_kernels_account_is_summed_up_in_a_line_per_session_or_controller():
    """From a guest's real `iscsiadm -m session -r SID -P 3` (4 sessions) and nvme sysfs/list-subsys output."""
    from pathlib import Path

    from protolab.run.attaching import summary

    data = Path(__file__).parents[2] / "data" / "attach"
    lines = summary("iscsi", (data / "iscsi-4-sessions.txt").read_text())
    assert len(lines) == 4 and all(ln.startswith("session ") for ln in lines)
    assert lines[0].endswith(", ImmediateData Yes, InitialR2T Yes, Attached scsi disk sda"), lines[0]
    assert "iSCSI Session State LOGGED_IN, HeaderDigest None, DataDigest None, MaxRecvDataSegmentLength 262144" \
        in lines[0]
    assert {ln.rsplit(" ", 1)[1] for ln in lines} == {"sda", "sdb", "sdc", "sdd"}
    assert summary("nvme-tcp", (data / "nvme-tcp.txt").read_text()) == [
        "nvme0: tcp traddr=198.18.0.2,trsvcid=4420,src_addr=198.18.0.128, 2 I/O queues, state live"]


def test_the_report_lists_each_hosts_attach():
    from protolab.report.sections.environment_section import EnvironmentModel, EnvironmentSection

    rec = {"host": "esx1", "target": "flash", "protocol": "nvme-tcp", "asked": NVME.describe(),
           "devices": ["/dev/nvme0n1"], "kernel": "nvme0: tcp traddr=10.1.2.5,trsvcid=4420, 4 I/O queues, state live",
           "summary": ["nvme0: tcp traddr=10.1.2.5,trsvcid=4420, 4 I/O queues, state live"],
           "found": ["/dev/nvme0n1 no signature"]}
    md = "\n".join(EnvironmentSection().markdown(EnvironmentModel({}, "complete", None, None, (rec,))))
    assert ("- esx1: flash: NVMe/TCP nqn.2014-08.org.example:flash namespace 1 at 10.1.2.5:4420, 4 I/O queue(s) → "
            "/dev/nvme0n1 (found: /dev/nvme0n1 no signature).\n  - nvme0: tcp traddr=10.1.2.5,trsvcid=4420, 4 I/O "
            "queues, state live") in md


def test_a_lun_from_256_is_found_under_the_number_linux_gives_it():
    from protolab.run.attach_iscsi import kernel_lun

    assert [kernel_lun(n) for n in (0, 255, 256, 16383)] == [0, 255, 16640, 32767]
    big = Attach.model_validate({"iscsi": {"portal": "10.1.2.3", "iqn": "iqn.2001-05.com.example:array", "lun": 300}})
    assert "L=300; L2=16684;" in attach_script(big, "")  # both numberings are looked under


def test_prepare_of_a_target_on_the_hosts_runs_there_never_on_this_machine(tmp_path):
    """A device attached on an ssh host (or a path there) is written through that host's fio server: this
    machine's /dev/sdb is never opened by protolab's own prepare."""
    from types import SimpleNamespace

    from protolab.engine.measure import HostRun
    from protolab.engine.targets import Access
    from protolab.run.procedure import Procedure

    calls = []
    fio = SimpleNamespace(run_job=lambda job, out, **kw: calls.append(("this machine", job.name)) or "{}",
                          run_clients=lambda clients, out, **kw: calls.append(("client", clients[0][0])) or "{}")
    agent = SimpleNamespace(client_arg=lambda: "esx1.sock")
    plan = load_plan_text(PLAN)
    bed = SimpleNamespace(fio=fio, sockets=tmp_path, check_before_window=lambda c: calls.append(("check", c.name)),
                          data_access=lambda c: Access("remote", "libaio", {"direct": "1"}, "/dev/sdb", 1 << 20),
                          host=lambda c, h, total, streams: HostRun("esx1", agent, None, streams))
    rundir = SimpleNamespace(job_path=lambda tag: tmp_path / f"{tag}.fio", raw_path=lambda tag: tmp_path / f"{tag}.json")
    Procedure(plan, bed, rundir, Silent(), lambda phase: None).prepare()
    # one LUN (targets one and four), written once, on esx1, right after its attach is checked
    assert calls == [("check", "a"), ("client", "esx1.sock")]


def test_an_nfs_data_file_that_is_a_link_is_refused_whatever_the_opt_in(tmp_path):
    """The check itself, run by sh on a directory standing for the mount: a link is an error, the mount undone."""
    s = attach_script(NFS, str(tmp_path / "m"))
    check = s[s.index('for p in "$M/$F"'):s.index('if [ -s "$M/$F" ]')]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "protolab.dat").symlink_to("/etc/shadow")
    p = subprocess.run(["sh", "-c", f"M={tmp_path / 'm'}; F=protolab.dat; umount() {{ :; }}; rmdir() {{ :; }}\n"
                       + check], capture_output=True, text=True, timeout=10)
    assert p.returncode == 4 and "is a link or not a plain file" in p.stdout, p.stdout
    out = "device /run/protolab-attach/x/protolab.dat\nerror /run/protolab-attach/x/protolab.dat is a link or not " \
          "a plain file: protolab writes only a plain file of its own\n"
    with pytest.raises(ToolError, match="is a link"):
        Attacher(FakeRunner({("ssh",): _answer(out, 4)}), "run1").attach(SSH, "filer", NFS, allow_overwrite=True)


def test_an_nvme_detach_not_told_its_controllers_reads_those_the_attach_wrote():
    s = detach_script(NVME, "/run/protolab-attach/abc", None)
    assert "IDS=/run/protolab-attach/abc.ids" in s and 'C=$(tr' in s and '< "$IDS"' in s and "C=$(ours)" not in s
    assert 'for c in $(ours); do cid "$c"; done > "$IDS"' in attach_script(NVME, "/run/protolab-attach/abc")
