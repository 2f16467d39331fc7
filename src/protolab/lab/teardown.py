"""Teardown: undo a lab's record in reverse, and ``down_all`` for anything carrying a prefix.

Each undo tolerates a resource that is already gone (a crash may have happened
between recording and creating), so teardown can always run to the end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..proc import Runner, SubprocessRunner
from ..telemetry.cgroups import RoleCgroups
from ..trust import UnsafePath, check_dir
from .fault_controls import undo_fault
from .netns import Net
from .procs import Processes, alive, terminate
from .record import Record, Resource
from .servers import tgt

TIMEOUT = 60.0


def mounted(path: str) -> bool:
    """Whether ``path`` is a mount point (per /proc/mounts)."""
    return any(line.split()[1] == path for line in Path("/proc/mounts").read_text().splitlines())


def loop_devices(runner: Runner, backing: str) -> list[str]:
    """Loop devices whose backing file is ``backing``."""
    out = runner.run(["losetup", "--noheadings", "--output", "NAME", "--associated", backing],
                     check=False, timeout=TIMEOUT).stdout
    return [w for w in out.split() if w.startswith("/dev/")]


def device_daemons(prefix: str) -> list[int]:
    """Pids of device-model daemons (protolab-blockdev) whose FUSE mount belongs to ``prefix``'s lab."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and Path(argv[0].decode(errors="replace")).name == "protolab-blockdev" \
                and Path(argv[1].decode(errors="replace")).name == f"{prefix}-dev":
            found.append(int(proc.name))
    return found


def undo(resource: Resource, runner: Runner, procs: Processes) -> str | None:
    """Remove one recorded resource; returns a description of what was removed, or None."""
    kind, name, extra = resource.kind, resource.name, resource.extra
    if kind == "process":
        was = procs.running(resource)
        if name == "tgtd":
            tgt.stop(runner, procs, resource)
        else:
            procs.stop(resource)
        return f"process {name} (pid {extra.get('pid')})" if was else None
    if kind == "mount":
        if mounted(name):
            done = runner.run(["umount", name], check=False, timeout=TIMEOUT)
            if done.returncode != 0:
                runner.run(["umount", "-l", name], check=False, timeout=TIMEOUT)
            return f"mount {name}"
        return None
    if kind == "loop":
        devs = loop_devices(runner, name)
        for dev in devs:
            runner.run(["losetup", "--detach", dev], check=False, timeout=TIMEOUT)
        return f"loop device {', '.join(devs)}" if devs else None
    if kind == "file":
        p = Path(name)
        if p.exists():
            p.unlink()
            return f"file {name}"
        return None
    if kind == "netns":
        net = Net(runner)
        for pid in net.pids(name):
            if alive(pid):
                terminate(pid, 2.0)
        return f"namespace {name}" if net.del_netns(name) else None
    if kind == "tgtd-socket":
        gone = [p for p in tgt.socket_paths(int(extra["port"])) if p.exists()]
        for p in gone:
            p.unlink()
        return f"tgtd control socket {extra['port']}" if gone else None
    if kind == "fault":  # recorded last, so undone first: a stalled device answers before the pool is unmounted
        return undo_fault(resource, runner, procs.record)
    if kind == "cgroup":  # the role cgroups (telemetry.cgroups): after the servers, recorded before them
        cg = RoleCgroups.at(Path(name))
        return f"cgroup {name}" if cg.remove() else None  # with the CPU weight's group (telemetry.priority)
    if kind == "dir":
        if Path(name).exists():
            shutil.rmtree(name, ignore_errors=True)
            return f"directory {name}"
        return None
    raise ValueError(f"unknown resource kind {kind!r} in the lab record")


def undo_record(record: Record, runner: Runner, procs: Processes) -> list[str]:
    """Undo every resource of ``record``, newest first, then delete the record."""
    removed: list[str] = []
    errors: list[str] = []
    for res in reversed(list(record.resources)):
        try:
            what = undo(res, runner, procs)
        except Exception as e:  # keep going: a partial teardown is worse than a late error
            errors.append(f"{res.kind} {res.name}: {e}")
            continue
        if what:
            removed.append(what)
        record.drop(res)
    if errors:
        from ..errors import ToolError

        raise ToolError("lab teardown left something behind: " + "; ".join(errors)
                        + "; run 'protolab lab down --all'")
    record.remove_file()
    return removed


def down_all(prefix: str = "pl", runner: Runner | None = None, workdirs: list[Path] | None = None) -> list[str]:
    """Remove anything carrying ``prefix``: lab records' resources, server processes in lab
    namespaces, the namespaces, pool mounts and loop devices; returns what was removed."""
    runner = runner or SubprocessRunner()
    removed: list[str] = []
    from .names import default_workdir

    for wd in [default_workdir(prefix), *(workdirs or [])]:
        if Record.exists(wd):
            try:
                check_dir(wd)  # a record another user could have written is never acted on
                rec = Record.load(wd)
                rec.check_resources(wd, prefix)
            except UnsafePath:
                raise
            except Exception:
                rec = None
            if rec is not None and rec.spec.get("prefix", prefix) == prefix:
                removed += undo_record(rec, runner, Processes(runner, rec, wd / "logs"))
    net = Net(runner)
    for ns in net.list_netns():
        if ns.startswith(f"{prefix}-"):
            for pid in net.pids(ns):
                if alive(pid):
                    terminate(pid, 2.0)
                    removed.append(f"process {pid} in {ns}")
            net.del_netns(ns)
            removed.append(f"namespace {ns}")
    image, mountname = f"{prefix}-pool.img", f"{prefix}-pool"
    for line in reversed(Path("/proc/mounts").read_text().splitlines()):
        mnt = line.split()[1]
        if Path(mnt).name in (mountname, f"{mountname}-nfs", f"{mountname}-knfsd"):
            runner.run(["umount", "-l", mnt], check=False, timeout=TIMEOUT)
            removed.append(f"mount {mnt}")
    out = runner.run(["losetup", "--list", "--json"], check=False, timeout=TIMEOUT).stdout
    for dev in json.loads(out or '{"loopdevices": []}').get("loopdevices", []):
        backing = (dev.get("back-file") or "").removesuffix(" (deleted)")
        # the knfsd volume's ext4 image (inside the pool: first), the pool's image, or the device model's file
        if Path(backing).name in (f"{prefix}-knfsd.img", image, f"{prefix}-disk"):
            runner.run(["losetup", "--detach", dev["name"]], check=False, timeout=TIMEOUT)
            removed.append(f"loop device {dev['name']} ({backing})")
    for pid in device_daemons(prefix):  # the device model's FUSE daemon: it unmounts its own mount
        terminate(pid, 2.0)
        removed.append(f"process {pid} (protolab-blockdev)")
    for line in reversed(Path("/proc/mounts").read_text().splitlines()):
        mnt = line.split()[1]
        if Path(mnt).name in (f"{prefix}-dev", f"{prefix}-mnt"):
            runner.run(["umount", "-l", mnt], check=False, timeout=TIMEOUT)
            removed.append(f"mount {mnt}")
    cg = RoleCgroups(prefix)  # exactly this prefix's role cgroups, never another prefix's
    removed += [f"cgroup {p}" for p in cg.remove()]  # the role groups and the CPU weight's, whichever exist
    return removed
