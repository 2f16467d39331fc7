"""Which accelerator guests run under: KVM when a probe guest boots under it, TCG otherwise, and why.

KVM can be present and still unusable: on a host with ``kvm_pvm`` (nested virtualisation
without hardware support) ``-cpu host`` aborts on an MSR and other CPU models hang early
in boot. So ``auto`` boots the real guest image under KVM for a bounded time and falls
back to TCG with the reason, which the run records.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtolabError
from ..proc import Runner
from .image import GuestImage
from .qemu import READY_LINE, GuestSpec

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


def choose(wanted: str, runner: Runner, image: GuestImage, timeout: float = PROBE_S) -> AccelChoice:
    """The accelerator for ``wanted`` (kvm, tcg or auto); kvm that does not work is a user error."""
    if wanted not in ACCELS:
        raise ProtolabError(f"hypervisor.accel {wanted!r} is not one of {', '.join(ACCELS)}")
    if wanted == "tcg":
        return AccelChoice("tcg", "asked for (hypervisor.accel = \"tcg\")")
    why = probe_kvm(runner, image, timeout)
    if why is None:
        return AccelChoice("kvm", "a probe guest booted under KVM")
    if wanted == "kvm":
        raise ProtolabError(f"hypervisor.accel = \"kvm\" but KVM does not work here: {why}; "
                            "set hypervisor.accel = \"auto\" or \"tcg\"")
    return AccelChoice("tcg", f"KVM unusable: {why}")
