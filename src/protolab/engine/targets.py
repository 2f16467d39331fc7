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

from ..conventions import DATA_FILE
from ..errors import TargetError
from ..plan.targets import parse_target
from ..proc import Runner

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
        where = self.filename or self.options.get("uri") or self.options.get("nfs_url") or "?"
        ns = f" in netns {self.netns}" if self.netns else ""
        return f"{self.kind} via {self.ioengine}: {where}{ns}"


def _escape(s: str) -> str:
    """fio job files treat ':' in filename as a separator; the libiscsi engine wants it escaped."""
    return s.replace(":", "\\:")


def resolve(
    url: str, *, size: int, ioengine: str | None, direct: bool, netns: str | None = None, owned: bool = False
) -> Access:
    """The Access for a target URL or path; raises TargetError naming the target when it cannot work."""
    try:
        ref = parse_target(url)
    except ValueError as e:
        raise TargetError(str(e)) from None
    if ref.kind == "lab":
        raise TargetError(f"target {url}: a lab target is resolved by the lab first")
    if ref.kind == "iscsi":
        host = f"{ref.host}:{ref.port}"
        return Access("iscsi", "libiscsi", {}, _escape(f"iscsi://{host}/{ref.iqn}/{ref.lun}"), size, netns, None,
                      owned)
    if ref.kind == "nbd":
        return Access("nbd", "nbd", {"uri": url}, None, size, netns, None, owned)
    if ref.kind == "nfs":
        return Access("nfs", "nfs", {"nfs_url": url}, DATA_FILE, size, netns, None, owned)
    path = Path(url).absolute()  # fio may run with another working directory (a server, a namespace)
    engine = ioengine or "io_uring"
    opts = {"direct": "1" if direct else "0"}
    if path.is_dir():
        path = path / DATA_FILE
    if path.exists() and stat.S_ISBLK(path.stat().st_mode):
        return Access("block", engine, opts, str(path), size, netns, path, owned)
    return Access("file", engine, opts, str(path), size, netns, path, owned)


def check_overwrite(access: Access, *, allow_overwrite: bool, runner: Runner, label: str) -> None:
    """Refuse a target that holds data protolab did not put there, unless the plan allows it."""
    if access.owned or allow_overwrite:
        return
    fix = f"add allow_overwrite = true to the target of {label} if its contents may be destroyed"
    if access.kind == "block":
        probe = runner.run(["blkid", "-p", "-o", "export", str(access.local_path)], check=False)
        if probe.returncode == 0 and any(
            line.startswith(("TYPE=", "PTTYPE=")) for line in probe.stdout.splitlines()
        ):
            found = ", ".join(ln for ln in probe.stdout.splitlines() if ln.startswith(("TYPE=", "PTTYPE=")))
            raise TargetError(f"target {access.local_path} ({label}) holds data ({found}); {fix}")
        if probe.returncode not in (0, 2):
            raise TargetError(
                f"target {access.local_path} ({label}): cannot tell whether it holds data "
                f"(blkid: {probe.one_line_error()}); {fix}"
            )
        return
    if access.kind == "file":
        p = access.local_path
        assert p is not None
        if p.exists() and p.stat().st_size > 0 and not sidecar(p).exists():
            raise TargetError(f"target {p} ({label}) is a non-empty file protolab did not create; {fix}")
        return
    if access.kind in ("iscsi", "nbd"):
        raise TargetError(
            f"target {access.options.get('uri') or access.filename} ({label}): protolab cannot see whether this "
            f"{access.kind} storage holds data; {fix}"
        )
    # nfs: protolab only ever writes its own file (protolab.dat) in the export.


def sidecar(path: Path) -> Path:
    """The marker that says protolab created ``path``."""
    return path.with_name(path.name + SIDECAR)


def create_file(path: Path, size: int) -> None:
    """Create (or grow) a data file protolab owns, and mark it as ours."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mark = sidecar(path)
    if not mark.exists():
        tmp = mark.with_name(mark.name + ".tmp")
        tmp.write_text(json.dumps({"created_by": "protolab", "size": size}) + "\n")
        os.replace(tmp, mark)
    with open(path, "ab") as f:
        if f.tell() < size:
            f.truncate(size)
