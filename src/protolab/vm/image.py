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
    """$PROTOLAB_GUEST (an absolute path), else the installed project's .deps/guest — never the working directory."""
    env = os.environ.get("PROTOLAB_GUEST")
    if env:
        if not os.path.isabs(env):
            raise ProtolabError(f"PROTOLAB_GUEST={env}: give an absolute path")
        return Path(env)
    from ..engine.fio import project_deps

    return project_deps() / "guest"


def find_image(where: Path | None = None) -> GuestImage:
    """The guest image in ``where`` (default guest_dir()); ProtolabError saying how to build it."""
    d = where or guest_dir()
    kernel, initrd, info = d / KERNEL, d / INITRD, d / INFO
    if not (kernel.is_file() and initrd.is_file() and info.is_file()):
        raise ProtolabError(f"no guest image in {d}; run 'scripts/build-guest.sh {d}' (or 'make deps')")
    from ..trust import check_dir, check_file

    check_dir(Path(os.path.realpath(d)))  # QEMU boots what is here, as root: only root may have put it there
    for f in (kernel, initrd, info):
        check_file(Path(os.path.realpath(f)), "guest image file")
    try:
        data = json.loads(info.read_text())
    except ValueError as e:
        raise ProtolabError(f"{info}: unreadable ({e}); run 'scripts/build-guest.sh {d}' again") from None
    return GuestImage(d, kernel, initrd, data)
