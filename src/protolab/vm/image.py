"""Where the guest image is (scripts/build-guest.sh's output) and what it holds."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import ProtolabError, ToolError

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
    from ..trust import project_deps

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


#: How long building the image may take: the guest's fio compiled on a busy 2-core machine, then the initramfs.
BUILD_TIMEOUT = 3600.0


def ensure_image(runner, note: Callable[[str], None]) -> GuestImage:
    """The guest image for a study that needs one; the installed project's own image is built first when it is
    missing or older than its inputs (`make demo` leaves it out), with one progress line through ``note``.

    The project's scripts/build-guest.sh --check decides and its scripts/install-deps.sh guest builds: protolab runs
    as root, so both are checked as programs are (root's, writable by no one else, under root's directories).
    $PROTOLAB_GUEST names the operator's own image: used as it is, never built.
    """
    if os.environ.get("PROTOLAB_GUEST"):
        return find_image()
    from ..trust import check_program, project_deps

    where = guest_dir()
    scripts = project_deps().parent / "scripts"
    if not (scripts / "build-guest.sh").is_file():  # an installed package without its project: nothing to build with
        return find_image(where)
    check = check_program(scripts / "build-guest.sh", "protolab's scripts/build-guest.sh")
    done = runner.run([str(check), "--check", str(where)], check=False, timeout=60)
    if done.returncode == 0:
        return find_image(where)
    if done.returncode != 3:
        raise ToolError(f"{check} --check {where}: {done.one_line_error()}")
    install = check_program(scripts / "install-deps.sh", "protolab's scripts/install-deps.sh")
    note(f"guest image: building it in {where} for the first study that needs a guest ({install} guest: "
         "its kernel's package, its fio and tools, the initramfs; a few minutes)")
    built = runner.run([str(install), "guest"], check=False, timeout=BUILD_TIMEOUT)
    if built.returncode != 0:
        raise ToolError(f"building the guest image failed: {built.one_line_error()}; run '{install} guest' to see "
                        "its whole output")
    return find_image(where)
