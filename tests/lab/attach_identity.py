"""Issue 40's steps of test_attach_hosts.py, on its guests: what a run attached is checked by identity before every
window, and its detach removes only what it made.

- An NFS data file swapped for a link to a file of the host's, on the export, during a window: the next window
  does not start (one line), and the link's target is unchanged (the mount is nosymfollow as well).
- An iSCSI device name that names another disk between two windows (the user logs the run's session out and logs
  in to the LUN through their own iface: the same name, someone else's session): the run stops before the window
  (one line), and nothing is written to the LUN.
- After a SIGKILL, the user disconnects the run's NVMe controller and connects their own: it takes the same name,
  and `protolab detach` leaves it connected, saying so.
- Two killed runs' iSCSI sessions, each through the run's own iface: `protolab detach` of the first leaves the
  second's session, whose own detach then removes it.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path

VICTIM = "/etc/protolab-victim"  # a file of the host's own, which a link on the export points at
VICTIM_TEXT = "the host own file"
#: the md5 of the LUN's first 16 MiB, read past the page cache (a whole read, else no sum)
LUN_SUM = ("dd if={disk} bs=1M count=16 iflag=direct 2>/dev/null > /tmp/lun && [ $(wc -c < /tmp/lun) -eq 16777216 ] "
           "&& md5sum < /tmp/lun; rm -f /tmp/lun")
#: wait (up to 50 s) until no process of the host holds a file whose path has {what}
UNHELD = ("i=0; while ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q '{what}'; do i=$((i+1)); [ $i -lt 200 ] || exit 1; "
          "sleep 0.25; done")


def only(text: str, configurations: list[str], repeats: int = 1) -> str:
    """The attach plan with only ``configurations``, in that order (the first is the baseline), and ``repeats``."""
    head, *blocks = text.split("[[configurations]]\n")
    tail = blocks[-1][blocks[-1].index("[targets."):]
    blocks[-1] = blocks[-1][:blocks[-1].index("[targets.")]
    kept = sorted((b for b in blocks if b.split('"')[1] in configurations),
                  key=lambda b: configurations.index(b.split('"')[1]))  # in the order given: a run's order
    head = head.replace('baseline = "nvme"', f'baseline = "{configurations[0]}"')
    return head + "".join("[[configurations]]\n" + b for b in kept) + tail.replace("repeats = 1",
                                                                                    f"repeats = {repeats}")


def _until(what, timeout: float, why: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(why)


def _rows(results: Path) -> int:
    cells = next(results.glob("*/cells.csv"), None)
    return len(list(csv.DictReader(cells.open()))) if cells is not None else 0


def _line(err: str, marker: str) -> str:
    """The one line of ``err`` that says ``marker``."""
    return next((ln for ln in err.splitlines() if marker in ln), "")


def a_link_swapped_on_the_export_writes_nothing_through_it(ssh, go, plan: Path, text: str, tmp_path: Path) -> None:
    plan.write_text(only(text.replace('duration = "2s"', 'duration = "12s"'), ["nfs-4.1"], repeats=2))
    assert ssh(f"echo '{VICTIM_TEXT}' > {VICTIM} && echo ok").stdout.strip() == "ok"
    run = go(["run", str(plan), "--results", str(tmp_path / "n")])
    attached = _until(lambda: _attached(tmp_path / "n"), 300, "no NFS attach recorded in 300 s")
    data = attached[0]["devices"][0]
    assert "nosymfollow" in attached[0]["kernel"], attached[0]["kernel"]
    # once fio holds the data file open (the first window), whoever controls the export swaps it for a link
    held = ssh(f"i=0; until ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q ' {data}'; do i=$((i+1)); "
               f"[ $i -lt 200 ] || exit 1; sleep 0.25; done; rm {data} && ln -s {VICTIM} {data} && echo swapped")
    assert held.stdout.strip() == "swapped", (held.stdout, held.stderr)
    out, err = run.communicate(timeout=300)
    line = _line(err, f"{data} is now a symbolic link")
    assert run.returncode != 0 and line, (run.returncode, err[-2000:])
    assert "Traceback" not in err and _rows(tmp_path / "n") == 1, err  # the second window never started
    assert ssh(f"cat {VICTIM}").stdout.strip() == VICTIM_TEXT  # nothing was written through the link
    print(f"\nNFS link swap: {line[:200]}")


def _attached(results: Path) -> list[dict]:
    m = next(results.glob("*/manifest.json"), None)
    return json.loads(m.read_text() or "{}").get("attached", []) if m is not None else []


def a_renamed_device_stops_the_run(lab, ssh, go, plan: Path, text: str, tmp_path: Path) -> None:
    addr, iqn = lab.names.server_guest_address(0), lab.names.lio_iqn
    # iSCSI first: its first window, then NVMe's, during which the name is taken, then iSCSI's second, refused
    # (each window is checked for its own configuration's target alone: NVMe's attach and window run on)
    plan.write_text(only(text.replace('duration = "2s"', 'duration = "15s"'), ["iscsi-1", "nvme"], repeats=2))
    run = go(["run", str(plan), "--results", str(tmp_path / "d")])
    _until(lambda: _rows(tmp_path / "d") >= 1, 400, "the first iSCSI window did not end in 400 s")
    disk = next(a for a in _attached(tmp_path / "d") if a["target"] == "lun1")["devices"][0]
    # the NVMe window runs; the user logs the run's session out and logs in to the same LUN through their own
    # iface: the name the run recorded now names a disk of someone else's session
    node = f"-m node -T {iqn} -p {addr}:3260 -I default"
    swap = ssh("for s in /sys/class/iscsi_session/session*; do iscsiadm -m session -r ${s##*session} -u "
               f">/dev/null; done; iscsiadm {node} -o new >/dev/null && iscsiadm {node} --login >/dev/null && "
               f"i=0; until [ -b {disk} ]; do i=$((i+1)); [ $i -lt 100 ] || exit 1; sleep 0.2; done; "
               + LUN_SUM.format(disk=disk))
    before = swap.stdout.split()[0] if swap.returncode == 0 and swap.stdout.strip() else None
    assert before, (swap.stdout, swap.stderr)
    try:
        out, err = run.communicate(timeout=300)
        line = _line(err, f"{disk} is no longer the disk this run attached")
        assert run.returncode != 0 and line, (run.returncode, err[-2000:])
        assert "iface=default" in line and "Traceback" not in err and _rows(tmp_path / "d") == 2, err
        after = ssh(LUN_SUM.format(disk=disk)).stdout.split()[0]
        assert after == before  # nothing was written to the disk that took the name
        print(f"renamed device: {line[:240]}")
    finally:
        ssh(f"iscsiadm {node} --logout; iscsiadm {node} -o delete")


def _killed(run, results: Path) -> Path:
    _until(lambda: _attached(results), 300, f"no attach recorded in {results} in 300 s")
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    return next(results.iterdir())


def a_reused_nvme_controller_name_survives_detach(lab, ssh, go, plan: Path, text: str, tmp_path: Path,
                                                  killed: list[Path]) -> None:
    addr, nqn = lab.names.server_guest_address(0), lab.names.nqn
    plan.write_text(only(text.replace('duration = "2s"', 'duration = "5s"'), ["nvme"]))
    rundir = _killed(go(["run", str(plan), "--results", str(tmp_path / "c")]), tmp_path / "c")
    killed.append(rundir)
    assert ssh(UNHELD.format(what="/dev/nvme")).returncode == 0  # the killed run's fio has let go
    name = ssh("ls /sys/class/nvme").stdout.split()
    assert len(name) == 1, name
    # the run's controller goes (its path lost, or the user's hand); the user's own connect gets its name
    mine = ssh(f"nvme disconnect -d {name[0]} >/dev/null && nvme connect -t tcp -a {addr} -s 4420 -n {nqn} "
               ">/dev/null && ls /sys/class/nvme")
    assert mine.stdout.split() == name, (mine.stdout, mine.stderr)
    try:
        p = go(["detach", str(rundir)])
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and f"{name[0]} is not the controller this run connected" in out + err, (out, err)
        assert ssh("ls /sys/class/nvme").stdout.split() == name  # the user's controller is still connected
        print(f"reused NVMe name: {[ln for ln in (out + err).splitlines() if 'left alone' in ln][0][:200]}")
    finally:
        ssh(f"nvme disconnect -n {nqn}")


def another_runs_iscsi_session_survives_detach(lab, ssh, go, plan: Path, text: str, tmp_path: Path,
                                               killed: list[Path]) -> None:
    plan.write_text(only(text.replace('duration = "2s"', 'duration = "5s"'), ["iscsi-1"]))
    first = _killed(go(["run", str(plan), "--results", str(tmp_path / "i1")]), tmp_path / "i1")
    killed.append(first)
    # its session goes by the user's hand (its node record stays); a second run attaches the same LUN
    assert ssh("for s in /sys/class/iscsi_session/session*; do iscsiadm -m session -r ${s##*session} -u; done"
               ).returncode == 0
    second = _killed(go(["run", str(plan), "--results", str(tmp_path / "i2")]), tmp_path / "i2")
    killed.append(second)
    ifaces = "cat /sys/class/iscsi_session/session*/ifacename 2>/dev/null"
    theirs = ssh(ifaces).stdout.split()
    assert len(theirs) == 1 and theirs[0].startswith("protolab-"), theirs
    p = go(["detach", str(first)])
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, (out, err)
    assert ssh(ifaces).stdout.split() == theirs  # the second run's session is still logged in
    p = go(["detach", str(second)])
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and ssh(ifaces).stdout.split() == [], (out, err)
    print(f"another run's iSCSI session ({theirs[0]}) survived the first run's detach")
