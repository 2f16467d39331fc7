"""NFS's attach, detach and check scripts (mount.nfs, /proc/mounts): see run.attaching.

Whoever controls the export controls what is in it, between any two windows: the data file may become a link to
a file of the host's, which fio (root) would follow. So the mount is nosymfollow (the kernel follows no link on
it, Linux >= 5.10; a bind remount sets it, as not every mount.nfs passes the flag on), and before every window the check
finds the mount still there with its flags and the data file a plain file on it (its st_dev the mount's own,
recorded at attach), or absent.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..plan.attach import NfsAttach
from .attach_sh import ATTACH_DIR, mounted_attach
from .hostinit import MountedInitiator


def options(s: NfsAttach) -> str:
    """mount -o: the plan's options, nosuid, nodev, noexec, and nolock for NFSv3 (fio's streams take disjoint
    regions: no lock manager); nosymfollow comes with a remount (attach_sh.FLAGS)."""
    return s.options() + ",nosuid,nodev,noexec" + (",nolock" if s.version == "3" else "")


def _vars(s: NfsAttach, mount: str) -> str:
    q = shlex.quote
    source = f"[{s.server}]:{s.export}" if ":" in s.server else f"{s.server}:{s.export}"
    return f"M={q(mount)}; SRC={q(source)}; O={q(options(s))}; F={q(s.file)}; D={q(ATTACH_DIR)}"


def attach(s: NfsAttach, mount: str) -> str:
    return mounted_attach(_vars(s, mount), """\
if command -v mount.nfs >/dev/null; then out=$(mount.nfs "$SRC" "$M" -o "$O" 2>&1)
else out=$(mount -t nfs -o "$O" "$SRC" "$M" 2>&1); fi || { echo "error mount: $(echo "$out" | tail -n 1)"; rmdir "$M"; \
exit 4; }""")


@dataclass(frozen=True)
class NfsInitiator(MountedInitiator):
    def attach(self, spec: NfsAttach, mount: str, run_key: str) -> str:
        return attach(spec, mount)

    def storage(self, spec: NfsAttach) -> tuple:
        return (self.protocol, spec.server, spec.export)


INITIATOR = NfsInitiator("nfs", "mount.nfs", "nfs", "nfs-common", mounted=True)
