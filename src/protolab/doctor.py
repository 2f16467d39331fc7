"""What this machine has and allows: fio and its engines, and what the embedded lab needs."""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from .engine.fio import NEEDED_ENGINES, Fio, find_fio
from .errors import ProtolabError
from .proc import Runner, SubprocessRunner


@dataclass(frozen=True)
class Check:
    """One item: what, whether it is there, what was seen, and what to do if not."""

    item: str
    ok: bool
    detail: str
    fix: str = ""


def fio_checks(runner: Runner) -> list[Check]:
    """fio's path, version and engines."""
    try:
        path, origin = find_fio()
    except ProtolabError as e:  # a fio protolab will not run as root (another user could change it)
        return [Check("fio", False, str(e), "set PROTOLAB_FIO to a fio that root owns, or run 'make deps'")]
    if not path:
        return [Check("fio", False, "not found", "run 'make deps', or set PROTOLAB_FIO=/path/to/fio")]
    try:
        fio = Fio(path, runner)
        version = fio.version()
        missing = fio.missing_engines()
    except ProtolabError as e:
        return [Check("fio", False, f"{path}: {e}", "run 'make deps', or fix PROTOLAB_FIO")]
    checks = [Check("fio", True, f"{version} at {path} ({origin})")]
    checks.append(Check(
        "fio engines", not missing,
        f"has {', '.join(e for e in NEEDED_ENGINES if e not in missing)}"
        + (f"; lacks {', '.join(missing)}" if missing else ""),
        "run 'make deps' to build fio with libiscsi, nfs and nbd (Debian's fio lacks libiscsi and nfs)",
    ))
    return checks


def lab_checks(runner: Runner) -> list[Check]:
    """What the embedded lab needs: root, network namespaces, loop devices, tc, btrfs and the servers."""
    from .lab.servers import ADAPTERS

    root = os.geteuid() == 0
    checks = [Check("root", root, "running as root" if root else f"running as uid {os.geteuid()}",
                    "run as root (sudo): the lab creates namespaces, links and loop devices")]
    if root:
        # a name of this probe's own: two checks at once (two validates) must not meet on one name, nor delete
        # each other's namespace
        probe = f"pl-probe-{os.getpid()}-{secrets.token_hex(4)}"
        made = runner.run(["ip", "netns", "add", probe], check=False)
        ok = made.returncode == 0
        if ok:
            runner.run(["ip", "netns", "delete", probe], check=False)
        checks.append(Check("network namespaces", ok, "ip netns add works" if ok else made.one_line_error(),
                            "use a kernel and container that allow network namespaces (CAP_SYS_ADMIN)"))
    else:
        checks.append(Check("network namespaces", False, "not checked without root", "run as root"))
    loop = os.path.exists("/dev/loop-control")
    checks.append(Check("loop devices", loop, "/dev/loop-control present" if loop else "/dev/loop-control missing",
                        "load the loop module (modprobe loop) or allow loop devices in the container"))
    for tool, pkg, what in [
        ("ip", "iproute2", "namespaces and links"), ("tc", "iproute2", "rate, delay and loss"),
        ("ethtool", "ethtool", "segmentation offloads"), ("mkfs.btrfs", "btrfs-progs", "the pool"),
        ("losetup", "util-linux", "the pool's loop device"),
        # the lab's servers (lab.servers); those only the guests' kernels reach are checked with the VMs
        *(tool for a in ADAPTERS.values() if not a.guests for tool in a.tools),
    ]:
        checks.append(_tool(tool, pkg, what, "(or 'make deps')"))
    return checks + device_checks()


def _tool(tool: str, pkg: str, what: str, how: str) -> Check:
    found = shutil.which(tool) or next(
        (p for p in (f"/usr/sbin/{tool}", f"/sbin/{tool}", f"/usr/bin/{tool}") if os.path.exists(p)), None)
    return Check(tool, bool(found), found or "not found", f"apt-get install {pkg} {how}, needed for {what}")


def device_checks() -> list[Check]:
    """One row per device model preset ([lab.storage]): ram always; the others need FUSE, protolab-blockdev and
    protolab-direct.so (NFS-Ganesha's direct I/O)."""
    from .lab.device import EATMYDATA, find_blockdev, find_direct_lib, fuse_available
    from .plan.storage import PRESETS, StorageSpec

    try:
        binary, origin = find_blockdev()
        built = f"protolab-blockdev at {binary} ({origin})" if binary else "protolab-blockdev is not built"
        lib = find_direct_lib()
        built += f", protolab-direct.so at {lib}" if lib else ", protolab-direct.so is not built"
    except ProtolabError as e:
        binary, lib, built = None, None, str(e)
    fuse = fuse_available()
    out = []
    for name in PRESETS:
        spec = StorageSpec(model=name)
        if spec.is_ram:
            out.append(Check(f"device model {name}", True, "always: the pool answers from RAM (no device model)"))
            continue
        eat = not spec.write_us or EATMYDATA.exists()  # a write-back model: NFS-Ganesha's fsync a no-op
        ok = fuse and binary is not None and lib is not None and eat
        seen = (f"{spec.summary()}; " + ("/dev/fuse present" if fuse else "/dev/fuse missing") + f", {built}"
                + ("" if not spec.write_us else f", {EATMYDATA} " + ("present" if eat else "missing")))
        fix = ("run 'make deps' (builds protolab-blockdev with libfuse3-dev, and protolab-direct.so)" if fuse
               else "load the fuse module (modprobe fuse) or allow /dev/fuse in the container")
        out.append(Check(f"device model {name}", ok, seen, fix))
    return out


def lab_blocker(runner: Runner | None = None) -> str | None:
    """One line naming what keeps the embedded lab from running here, or None."""
    missing = [c for c in lab_checks(runner or SubprocessRunner()) if not c.ok]
    if not missing:
        return None
    first = missing[0]
    more = f" (and {len(missing) - 1} more; see 'protolab doctor')" if len(missing) > 1 else ""
    return f"the embedded lab needs {first.item}: {first.detail}; {first.fix}{more}"


QEMU_MODULES = Path("/usr/lib/x86_64-linux-gnu/qemu")


def vm_checks(runner: Runner, probe_timeout: float = 20.0) -> list[Check]:
    """Virtual machines as load hosts: QEMU, its iSCSI/NFS block drivers, the guest image, the accelerator."""
    from .vm.accel import choose
    from .vm.image import find_image
    from .vm.qemu import QEMU

    qemu = shutil.which(QEMU)
    if not qemu:
        return [Check("qemu", False, "not found", "scripts/install-deps.sh guest (protolab runs it at the first study "
                                                  "that needs a guest), or apt-get install qemu-system-x86 "
                                                  "qemu-block-extra")]
    version = runner.run([qemu, "--version"], check=False, timeout=30).stdout.splitlines()
    checks = [Check("qemu", True, f"{version[0] if version else '?'} at {qemu}")]
    from .lab.servers import ADAPTERS
    from .plan.protocols import PROTOCOLS

    # the servers only the guests' kernels reach (lab.servers: guests), installed with QEMU
    checks += [_tool(tool, pkg, what, "(or scripts/install-deps.sh guest)") for a in ADAPTERS.values() if a.guests
               for tool, pkg, what in a.tools]

    drivers = {p.name: (QEMU_MODULES / f"{p.qemu_module}.so").exists() for p in PROTOCOLS.values() if p.qemu_module}
    checks.append(Check("qemu block drivers", all(drivers.values()),
                        ", ".join(f"{p.name} built in" for p in PROTOCOLS.values()
                                  if p.qemu and not p.qemu_module) + "; "
                        + ", ".join(f"{d} {'present' if ok else 'missing'}" for d, ok in drivers.items()),
                        "apt-get install qemu-block-extra (QEMU's libiscsi and libnfs drivers)"))
    try:
        image = find_image()
    except ProtolabError as e:
        checks.append(Check("guest image", False, str(e).split(";")[0], "built the first time a study needs a guest; "
                            "or now: scripts/install-deps.sh guest (or 'make deps')"))
        checks.append(Check("accelerator", False, "not probed without a guest image", "build the guest image"))
        return checks
    info = image.info
    checks.append(Check("guest image", True, f"{image.dir}: kernel {info.get('kernel')}, {info.get('fio')}, "
                                              f"{info.get('modules')} modules"))
    try:
        chosen = choose("auto", runner, image, probe_timeout, remember=True)
        checks.append(Check("accelerator", True, f"{chosen.accel}: {chosen.reason}"))
    except ProtolabError as e:
        checks.append(Check("accelerator", False, str(e), "see 'protolab doctor'"))
        chosen = None
    return checks + [kernel_paths_check(runner, info, chosen.accel if chosen else None)]


def kernel_paths_check(runner: Runner, info: dict, accel: str | None) -> Check:
    """Where each kernel data path runs: in guests (which accelerator), and whether this host's kernel has it."""
    from .plan.protocols import guest_kernel_only
    from .plan.servers import SERVERS

    kernel = [s for s in SERVERS.values() if s.kernel or guest_kernel_only(s.protocol)]
    in_image = set(info.get("kernel_paths") or [])  # by protocol (scripts/build-guest.sh)
    native = {m: runner.run(["modinfo", "-F", "filename", m], check=False, timeout=30).returncode == 0
              for s in kernel for m in s.modules}
    host = ("this host's kernel has " + ", ".join(f"{m} {'yes' if ok else 'no'}" for m, ok in native.items())
            + " (protolab runs them in guests)")
    missing = [s for s in kernel if s.protocol not in in_image]
    where = f"in {accel.upper()} guests" if accel else "in guests (no accelerator works)"
    return Check("kernel data paths", not missing and accel is not None,
                 f"{', '.join(f'{s.protocol} by {s.title}' for s in kernel if s not in missing) or 'none'} {where}"
                 + (" — TCG figures measure emulation: only comparisons' mechanics mean anything" if accel == "tcg"
                    else "") + f"; {host}",
                 "rebuild the guest image: scripts/build-guest.sh (or 'make deps')" if missing else
                 "see the accelerator line")
