"""Who holds a lab prefix: one lab per prefix, whatever its workdir.

A lab's names (namespaces, interfaces, mounts) come from its prefix, so two labs with one
prefix would tear each other down. The holder is written to
/run/protolab/holders/<prefix>.json (created exclusively, in protolab's root-only base) when a lab comes up and
removed when it goes down. A second lab on a held prefix is refused, naming the holder's
PID; a holder that is gone (its process dead, or a `lab up` lab whose record is gone) is
swept and the prefix taken over.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import ProtolabError
from ..trust import PRIVATE_BASE, UnsafePath, check_file, secure_dir
from .procs import alive, start_time

HOLDERS = PRIVATE_BASE / "holders"


@dataclass(frozen=True)
class Holder:
    """The process (a `protolab run`, or `protolab lab up`, whose lab outlives it) that holds a prefix."""

    prefix: str
    pid: int
    started: int | None
    uid: int
    workdir: str
    kind: str  # "run" (held while the process lives) or "lab-up" (held until `lab down`)

    def live(self) -> bool:
        """Whether the prefix is still held."""
        if self.kind == "lab-up":
            return (Path(self.workdir) / "lab.json").exists()
        return alive(self.pid, self.started)


def path_of(prefix: str, root: Path = HOLDERS) -> Path:
    """The holder file of ``prefix``."""
    return root / f"{prefix}.json"


def read(prefix: str, root: Path = HOLDERS) -> Holder | None:
    """The recorded holder of ``prefix``, or None; UnsafePath when the file is not root's alone (never swept)."""
    path = path_of(prefix, root)
    if not os.path.lexists(path):
        return None
    check_file(path, "lab holder")
    try:
        data = json.loads(path.read_text())
        held = Holder(**data)
    except (OSError, ValueError, TypeError):
        return None
    if not all(isinstance(v, t) for v, t in ((held.prefix, str), (held.pid, int), (held.uid, int),
                                             (held.workdir, str), (held.kind, str))):
        return None
    return held


def made(prefix: str, root: Path = HOLDERS) -> bool:
    """Whether a holder shows protolab made ``prefix``'s names: only then may a hint say to sweep the prefix
    (`lab down --all` removes every namespace carrying it: ``cni-*`` are Kubernetes')."""
    try:
        return read(prefix, root) is not None
    except UnsafePath:
        return False


def acquire(prefix: str, workdir: Path, kind: str, sweep: Callable[[Holder | None], None],
            root: Path = HOLDERS) -> Holder:
    """Take ``prefix`` for this process; ProtolabError naming the holder when it is held by a live one."""
    secure_dir(root)
    me = Holder(prefix, os.getpid(), start_time(os.getpid()), os.getuid(), str(Path(workdir).absolute()), kind)
    for _ in range(3):
        try:
            fd = os.open(path_of(prefix, root), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            held = read(prefix, root)
            if held is not None and held.live() and held.pid != os.getpid():
                how = ("a 'protolab lab up' lab" if held.kind == "lab-up" else "protolab run")
                raise ProtolabError(
                    f"lab prefix '{prefix}' is held by {how} with PID {held.pid} (workdir {held.workdir}); "
                    f"wait for it, run 'protolab lab down --prefix {prefix}', or set another lab.prefix") from None
            sweep(held)  # the holder is gone: what it left is ours to remove
            path_of(prefix, root).unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(me.__dict__, f)
        return me
    raise ProtolabError(f"lab prefix '{prefix}': cannot take {path_of(prefix, root)}; check that directory")


def release(holder: Holder, root: Path = HOLDERS) -> None:
    """Give the prefix up (only if this process still holds it)."""
    try:
        held = read(holder.prefix, root)
    except UnsafePath:
        return
    if held is not None and held.pid == holder.pid and held.workdir == holder.workdir:
        path_of(holder.prefix, root).unlink(missing_ok=True)


def mine(root: Path = HOLDERS) -> list[Holder]:
    """Holders recorded by this user whose lab is still up (for `lab down` without --prefix)."""
    out = []
    for p in sorted(root.glob("*.json")) if root.is_dir() and not root.is_symlink() else []:
        try:
            h = read(p.stem, root)
        except UnsafePath:
            continue
        if h is not None and h.uid == os.getuid() and (Path(h.workdir) / "lab.json").exists():
            out.append(h)
    return out
