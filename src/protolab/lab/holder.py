"""Who holds a lab prefix: one lab per prefix, whatever its workdir.

A lab's names (namespaces, interfaces, mounts) come from its prefix, so two labs with one
prefix would tear each other down. The holder is written to
/var/tmp/protolab-lab/holders/<prefix>.json (created exclusively) when a lab comes up and
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
from .procs import alive, start_time

HOLDERS = Path("/var/tmp/protolab-lab/holders")


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
    """The recorded holder of ``prefix``, or None."""
    try:
        data = json.loads(path_of(prefix, root).read_text())
        return Holder(**data)
    except (OSError, ValueError, TypeError):
        return None


def acquire(prefix: str, workdir: Path, kind: str, sweep: Callable[[Holder | None], None],
            root: Path = HOLDERS) -> Holder:
    """Take ``prefix`` for this process; ProtolabError naming the holder when it is held by a live one."""
    root.mkdir(parents=True, exist_ok=True)
    me = Holder(prefix, os.getpid(), start_time(os.getpid()), os.getuid(), str(Path(workdir).absolute()), kind)
    for _ in range(3):
        try:
            fd = os.open(path_of(prefix, root), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
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
    held = read(holder.prefix, root)
    if held is not None and held.pid == holder.pid and held.workdir == holder.workdir:
        path_of(holder.prefix, root).unlink(missing_ok=True)
    try:
        root.rmdir()  # leave nothing under /var/tmp once no lab is up
        root.parent.rmdir()
    except OSError:
        pass


def mine(root: Path = HOLDERS) -> list[Holder]:
    """Holders recorded by this user whose lab is still up (for `lab down` without --prefix)."""
    out = []
    for p in sorted(root.glob("*.json")) if root.is_dir() else []:
        h = read(p.stem, root)
        if h is not None and h.uid == os.getuid() and (Path(h.workdir) / "lab.json").exists():
            out.append(h)
    return out
