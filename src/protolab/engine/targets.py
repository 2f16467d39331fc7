"""Targets → how fio reaches them, and the rule that protects data the user did not give us.

A target is a local path (file, directory, block device), an iscsi://, nfs:// or
nbd:// URL of storage the user runs, or a lab export (resolved by the lab to a
URL or path first). Every target is one data object of ``size`` bytes; the load
streams of a cell take disjoint regions of it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..conventions import DATA_FILE, fio_escaped, fio_unescaped
from ..errors import TargetError
from ..plan.protocols import PROTOCOLS
from ..plan.target_grammar import parse_target
from ..proc import Runner
from ..trust import UnsafePath, make_dir

SIDECAR = ".protolab"  # '<data file>.protolab' marks a file protolab created


@dataclass(frozen=True)
class Access:
    """How fio reaches a target: engine, options, the file name, and the namespace to run in."""

    kind: str  # file | block | iscsi | nfs | nbd
    ioengine: str
    options: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    size: int = 0
    netns: str | None = None
    local_path: Path | None = None  # file or device, for the overwrite check and creation
    owned: bool = False  # protolab made this target (a lab export): no overwrite check

    def describe(self) -> str:
        """One line for logs and manifests."""
        where = (fio_unescaped(self.filename) if self.filename  # a URL as people write it, not fio's '\\:'
                 else self.options.get("uri") or self.options.get("nfs_url") or "?")
        ns = f" in netns {self.netns}" if self.netns else ""
        return f"{self.kind} via {self.ioengine}: {where}{ns}"


def resolve(
    url: str, *, size: int, ioengine: str | None, direct: bool, netns: str | None = None, owned: bool = False,
    remote: bool = False,
) -> Access:
    """The Access for a target URL or path; raises TargetError naming the target when it cannot work.

    ``remote``: the path is on the load hosts (ssh or fio agents), not here — nothing on this machine is looked at
    or created for it (``local_path`` stays None)."""
    try:
        ref = parse_target(url)
    except ValueError as e:
        raise TargetError(str(e)) from None
    if ref.kind == "lab":
        raise TargetError(f"target {url}: a lab target is resolved by the lab first")
    if ref.kind == "attach":
        raise TargetError(f"target {url}: an attached target is found on each host once attached")
    engine = PROTOCOLS[ref.kind].engine if ref.kind in PROTOCOLS else None
    if engine is not None:  # how fio's engine for the protocol is told where to go
        if ref.iqn is not None:  # libiscsi: the URL as filename, its default port written out
            url = f"{ref.kind}://{ref.host}:{ref.port}/{ref.iqn}/{ref.lun}"
            return Access(ref.kind, engine, {}, fio_escaped(url), size, netns, None, owned)
        if ref.export is not None and PROTOCOLS[ref.kind].own_file:  # libnfs: the export URL, protolab's file in it
            return Access(ref.kind, engine, {"nfs_url": url}, DATA_FILE, size, netns, None, owned)
        return Access(ref.kind, engine, {"uri": url}, None, size, netns, None, owned)  # libnbd: the URI
    engine = ioengine or "io_uring"
    opts = {"direct": "1" if direct else "0"}
    if remote:  # a path ending in '/' is a directory there: protolab's data file in it
        return Access("remote", engine, opts, url + DATA_FILE if url.endswith("/") else url, size, netns, None, owned)
    path = Path(url).absolute()  # fio may run with another working directory (a server, a namespace)
    if path.is_dir():
        path = path / DATA_FILE
    if path.exists() and stat.S_ISBLK(path.stat().st_mode):
        return Access("block", engine, opts, str(path), size, netns, path, owned)
    return Access("file", engine, opts, str(path), size, netns, path, owned)


def check_overwrite(access: Access, *, allow_overwrite: bool, runner: Runner, label: str) -> None:
    """Refuse a target that may hold data protolab did not put there, unless the plan allows it.

    Only a file protolab created (its root-owned sidecar marker beside it) or an empty file is taken as free: a
    block device may hold data no signature shows (dm-crypt, a raw database, wiped headers), and storage on a
    load host or behind a URL cannot be looked into from here.
    """
    if access.owned or allow_overwrite:
        return
    fix = f"add allow_overwrite = true to the target of {label} if its contents may be destroyed"
    where = access.options.get("uri") or access.options.get("nfs_url") or access.filename
    if access.kind == "block":
        probe = runner.run(["blkid", "-p", "-o", "export", str(access.local_path)], check=False)
        found = ", ".join(ln for ln in probe.stdout.splitlines() if ln.startswith(("TYPE=", "PTTYPE=")))
        if probe.returncode == 0 and found:
            raise TargetError(f"target {access.local_path} ({label}) holds data ({found}); {fix}")
        raise TargetError(f"target {access.local_path} ({label}) is a block device: protolab cannot tell whether "
                          "it holds data (blkid finds no signature on dm-crypt, raw database devices or wiped "
                          f"headers); {fix}")
    if access.kind == "remote":
        raise TargetError(f"target {where} ({label}) is on the load hosts, which protolab cannot look into; {fix}")
    if access.kind == "file":
        p = access.local_path
        assert p is not None
        if p.exists() and p.stat().st_size > 0 and not _ours(p):
            raise TargetError(f"target {p} ({label}) is a non-empty file protolab did not create; {fix}")
        return
    protocol = PROTOCOLS.get(access.kind)
    if protocol is not None and not protocol.own_file:
        raise TargetError(
            f"target {where} ({label}): protolab cannot see whether this {access.kind} storage holds data; {fix}")
    # an NFS export: protolab only ever writes its own file (protolab.dat) there (plan.protocols' own_file)


def _ours(path: Path) -> bool:
    """Whether ``path``'s sidecar marker is one protolab wrote: a regular file (not a link) that root owns."""
    try:
        st = os.lstat(sidecar(path))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


def sidecar(path: Path) -> Path:
    """The marker that says protolab created ``path``."""
    return path.with_name(path.name + SIDECAR)


def create_file(path: Path, size: int) -> None:
    """Create (or grow) a data file protolab owns, and mark it as ours; never through a symlink."""
    if not os.path.lexists(path.parent):  # made here, perhaps in a shared /tmp: then checked (trust.make_dir)
        try:
            make_dir(path.parent)
        except UnsafePath as e:
            raise TargetError(f"target {path}: {e}") from None
    mark = sidecar(path)
    if not _ours(path):
        if os.path.lexists(mark):
            raise TargetError(f"{mark} is not a marker protolab wrote (a link, or not root's); remove it")
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps({"created_by": "protolab", "size": size}) + "\n")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise TargetError(f"target {path}: cannot create it ({e.strerror}); a symlink is never followed") from None
    with os.fdopen(fd, "ab") as f:
        if f.tell() < size:
            f.truncate(size)
