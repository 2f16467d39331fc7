"""Where the guest image is (scripts/build-guest.sh's output) and what it holds."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtolabError

KERNEL, INITRD, INFO = "vmlinuz", "initramfs.cpio.gz", "guest.json"


@dataclass(frozen=True)
class GuestImage:
    """The kernel, the initramfs and the build's description (kernel version, fio version, modules)."""

    dir: Path
    kernel: Path
    initrd: Path
    info: dict


def guest_dir() -> Path:
    """$PROTOLAB_GUEST, else the project's .deps/guest (the first found upwards from here or the cwd)."""
    env = os.environ.get("PROTOLAB_GUEST")
    if env:
        return Path(env)
    for parent in [Path.cwd(), *Path(__file__).resolve().parents]:
        if (parent / ".deps").is_dir():
            return parent / ".deps" / "guest"
    return Path.cwd() / ".deps" / "guest"


def find_image(where: Path | None = None) -> GuestImage:
    """The guest image in ``where`` (default guest_dir()); ProtolabError saying how to build it."""
    d = where or guest_dir()
    kernel, initrd, info = d / KERNEL, d / INITRD, d / INFO
    if not (kernel.is_file() and initrd.is_file() and info.is_file()):
        raise ProtolabError(f"no guest image in {d}; run 'scripts/build-guest.sh {d}' (or 'make deps')")
    try:
        data = json.loads(info.read_text())
    except ValueError as e:
        raise ProtolabError(f"{info}: unreadable ({e}); run 'scripts/build-guest.sh {d}' again") from None
    return GuestImage(d, kernel, initrd, data)
