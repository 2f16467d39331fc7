"""Which accelerator guests run under: KVM when a probe guest boots under it, TCG otherwise, and why.

KVM can be present and still unusable: on a host with ``kvm_pvm`` (nested virtualisation
without hardware support) ``-cpu host`` aborts on an MSR and other CPU models hang early
in boot. So ``auto`` boots the real guest image under KVM for a bounded time and falls
back to TCG with the reason, which the run records.

The probe's answer is kept for the rest of the boot in root's private directory (/run/protolab, a tmpfs), keyed
by the boot, QEMU's binary, the guest image and the probe's time limit: on kvm_pvm every probe waits its full 20 s,
and doctor and every VM study would otherwise pay it again. A changed key probes afresh.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtolabError
from ..proc import Runner
from ..trust import open_nofollow, private_dir
from .image import GuestImage
from .qemu import QEMU, READY_LINE, GuestSpec

ACCELS = ("kvm", "tcg", "auto")
PROBE_S = 20.0


@dataclass(frozen=True)
class AccelChoice:
    """The accelerator chosen and the reason, for the manifest and the report."""

    accel: str
    reason: str


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for a probe guest's forward)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def probe_kvm(runner: Runner, image: GuestImage, timeout: float = PROBE_S) -> str | None:
    """None when a guest boots to its fio server under KVM within ``timeout`` s, else why not (one line)."""
    if not os.path.exists("/dev/kvm"):
        return "no /dev/kvm"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "/dev/kvm is not accessible to this user"
    with tempfile.TemporaryDirectory(prefix="protolab-kvm-probe-") as tmp:
        spec = GuestSpec("kvm-probe", image.kernel, image.initrd, accel="kvm", fio_port=free_port())
        console, log = Path(tmp) / "console.log", Path(tmp) / "qemu.log"
        with open(log, "wb") as out:
            p = runner.spawn(spec.argv(Path(tmp) / "pid", console), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if console.exists() and READY_LINE in console.read_text(errors="replace"):
                    return None
                if p.poll() is not None:
                    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
                    return f"QEMU under KVM exited: {lines[-1] if lines else f'exit code {p.returncode}'}"
                time.sleep(0.2)
            text = console.read_text(errors="replace") if console.exists() else ""
            last = text.strip().splitlines()[-1] if text.strip() else "no console output"
            return f"a guest under KVM did not boot within {timeout:g} s (last console line: {last})"
        finally:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def _probe_key(image: GuestImage, timeout: float) -> dict | None:
    """What the probe's answer depends on: this boot, QEMU's binary, the guest image, the time limit."""
    qemu = shutil.which(QEMU)
    if qemu is None:
        return None
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        files = {name: (os.path.realpath(path), os.stat(path))
                 for name, path in (("qemu", qemu), ("kernel", image.kernel), ("initrd", image.initrd))}
    except OSError:
        return None
    return {"boot": boot, "timeout": timeout, "kvm": os.path.exists("/dev/kvm"),
            **{name: [str(real), st.st_size, st.st_mtime_ns] for name, (real, st) in files.items()}}


def _cache_file() -> Path:
    return private_dir("cache") / "kvm-probe.json"


def remembered_probe(runner: Runner, image: GuestImage, timeout: float = PROBE_S) -> tuple[str | None, bool]:
    """``probe_kvm``'s answer and whether it was remembered from an earlier probe this boot (see the module)."""
    key = _probe_key(image, timeout)
    if key is not None:
        try:
            fd = open_nofollow(_cache_file(), os.O_RDONLY)
            with os.fdopen(fd) as f:
                st = os.fstat(f.fileno())
                kept = json.load(f) if st.st_uid == os.geteuid() and not st.st_mode & 0o022 else {}
            if kept.get("key") == key:
                return kept.get("why"), True
        except (OSError, ValueError, AttributeError, ProtolabError):
            pass  # none yet, unreadable, or a link: probe
    why = probe_kvm(runner, image, timeout)
    if key is not None:
        try:
            path = _cache_file()
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            fd = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"key": key, "why": why}, f)
            os.replace(tmp, path)
        except (OSError, ProtolabError):
            pass  # not kept: the next run probes again
    return why, False


def choose(wanted: str, runner: Runner, image: GuestImage, timeout: float = PROBE_S,
           remember: bool = False) -> AccelChoice:
    """The accelerator for ``wanted`` (kvm, tcg or auto); kvm that does not work is a user error. ``remember``:
    use (and keep) the answer of an earlier probe this boot."""
    if wanted not in ACCELS:
        raise ProtolabError(f"hypervisor.accel {wanted!r} is not one of {', '.join(ACCELS)}")
    if wanted == "tcg":
        return AccelChoice("tcg", "asked for (hypervisor.accel = \"tcg\")")
    why, kept = remembered_probe(runner, image, timeout) if remember else (probe_kvm(runner, image, timeout), False)
    if kept and why is not None:
        why += " (probed earlier this boot)"
    if why is None:
        return AccelChoice("kvm", "a probe guest booted under KVM" + (" (earlier this boot)" if kept else ""))
    if wanted == "kvm":
        raise ProtolabError(f"hypervisor.accel = \"kvm\" but KVM does not work here: {why}; "
                            "set hypervisor.accel = \"auto\" or \"tcg\"")
    return AccelChoice("tcg", f"KVM unusable: {why}")
