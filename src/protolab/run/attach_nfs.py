"""NFS's attach, detach and check scripts (mount.nfs, /proc/mounts): see run.attaching.

Whoever controls the export controls what is in it, between any two windows: the data file may become a link to
a file of the host's, which fio (root) would follow. So the mount is nosymfollow (the kernel follows no link on
it, Linux >= 5.10; a bind remount sets it, as not every mount.nfs passes the flag on), and before every window the check
finds the mount still there with its flags and the data file a plain file on it (its st_dev the mount's own,
recorded at attach), or absent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..plan.attach import NfsAttach
from .attach_sh import ATTACH_DIR, CHANGED, PATH
from .hostinit import HostInitiator

#: what the mount must show in /proc/mounts: nothing on the export acts on the host, no link on it is followed
FLAGS = ("nosuid", "nodev", "noexec", "nosymfollow")


def options(s: NfsAttach) -> str:
    """mount -o: the plan's options, nosuid, nodev, noexec, and nolock for NFSv3 (fio's streams take disjoint
    regions: no lock manager); nosymfollow comes with a remount (FLAGS)."""
    return s.options() + ",nosuid,nodev,noexec" + (",nolock" if s.version == "3" else "")


def _vars(s: NfsAttach, mount: str) -> str:
    q = shlex.quote
    source = f"[{s.server}]:{s.export}" if ":" in s.server else f"{s.server}:{s.export}"
    return f"M={q(mount)}; SRC={q(source)}; O={q(options(s))}; F={q(s.file)}; D={q(ATTACH_DIR)}"


#: the mount's flags, each of FLAGS present (0) or not, from the last line of /proc/mounts for $M
_FLAGGED = f"""flagged() {{ o=$(awk -v m="$M" '$2 == m {{o = $4}} END {{print o}}' /proc/mounts)
    for f in {' '.join(FLAGS)}; do case ",$o," in *,$f,*) ;; *) return 1 ;; esac; done; }}"""


def attach(s: NfsAttach, mount: str) -> str:
    return "\n".join([PATH, _vars(s, mount), _FLAGGED, """\
grep -q " $M " /proc/mounts && { echo "error $M is mounted already (left by a run of protolab that was killed: \
umount $M)"; exit 3; }
awk -v s="$SRC" '$1 == s {f=1} END {exit !f}' /proc/mounts && { echo "error $SRC is mounted already: a second mount \
would share its client, and not take the plan's options"; exit 3; }
[ ! -L "$D" ] && mkdir -p "$D" && chmod 700 "$D" || { echo "error cannot make $D (a link, or not writable)"; exit 4; }
[ ! -L "$M" ] && { [ -d "$M" ] || mkdir "$M"; } || { echo "error cannot make $M"; exit 4; }
if command -v mount.nfs >/dev/null; then out=$(mount.nfs "$SRC" "$M" -o "$O" 2>&1)
else out=$(mount -t nfs -o "$O" "$SRC" "$M" 2>&1); fi || { echo "error mount: $(echo "$out" | tail -n 1)"; rmdir "$M"; \
exit 4; }
out=$(mount -o remount,bind,nosuid,nodev,noexec,nosymfollow "$M" 2>&1)
flagged || { echo "error $M: could not be made nosymfollow (Linux 5.10 and util-linux mount are needed): \
$(echo "$out" | tail -n 1)"; umount "$M"; rmdir "$M"; exit 4; }
echo "device $M/$F"
grep " $M " /proc/mounts | sed 's/^/kernel /'
for p in "$M/$F" "$M/$F.protolab"; do
    if [ -L "$p" ] || { [ -e "$p" ] && [ ! -f "$p" ]; }; then
        echo "error $p is a link or not a plain file: protolab writes only a plain file of its own"
        umount "$M"; rmdir "$M"; exit 4
    fi
done
echo "ident $M/$F dev=$(stat -c %d "$M")"
if [ -s "$M/$F" ] && [ ! -f "$M/$F.protolab" ]; then
    echo "found $M/$F holds $(wc -c < "$M/$F") bytes protolab did not write"
elif [ ! -e "$M/$F.protolab" ]; then
    (set -C; echo '{"created_by": "protolab"}' > "$M/$F.protolab") 2>/dev/null
fi"""])


def check(mount: str, file: str, dev: str) -> str:
    """The check before a window: the mount there, alone, with FLAGS and the st_dev recorded (``dev``), and its
    data file a plain file on it, or not there yet (fio makes it: nosymfollow stops a link swapped in after)."""
    q = shlex.quote
    return "\n".join([PATH, f"M={q(mount)}; F={q(file)}; DEV={q(dev)}", _FLAGGED, f"""\
p="$M/$F"
fail() {{ echo "error $*"; exit {CHANGED}; }}
[ "$(awk -v m="$M" '$2 == m' /proc/mounts | wc -l)" -eq 1 ] || fail "$M is not this run's mount alone any more"
flagged || fail "$M is no longer mounted nosuid,nodev,noexec,nosymfollow"
[ "$(stat -c %d "$M")" = "$DEV" ] || fail "$M is no longer the file system this run mounted"
[ ! -L "$p" ] || fail "$p is now a symbolic link (the export's contents changed)"
[ ! -e "$p" ] || [ -f "$p" ] || fail "$p is no longer a plain file (the export's contents changed)"
[ ! -e "$p" ] || [ "$(stat -c %d "$p")" = "$DEV" ] || fail "$p is not on this run's mount\""""])


def detach(mount: str) -> str:
    return "\n".join([PATH, f"M={shlex.quote(mount)}", """\
if grep -q " $M " /proc/mounts; then out=$(umount "$M" 2>&1) || { echo "error umount: $out"; exit 6; }; fi
[ ! -d "$M" ] || rmdir "$M" """])


@dataclass(frozen=True)
class NfsInitiator(HostInitiator):
    def attach(self, spec: NfsAttach, mount: str, run_key: str) -> str:
        return attach(spec, mount)

    def detach(self, spec: NfsAttach, mount: str, ids: tuple[str, ...] | None, run_key: str) -> str:
        return detach(mount)

    def check(self, idents: tuple[str, ...]) -> str:
        """The NFS data file still a plain file on this run's nosymfollow mount."""
        path, _, dev = idents[0].partition(" dev=")
        mount, _, file = path.rpartition("/")
        return check(mount, file, dev)

    def identities(self, lines: list[str], devices: tuple[str, ...]) -> tuple[str, ...] | str:
        """The mount's st_dev."""
        ok = [ln for ln in lines if re.fullmatch(r"\S+ dev=[0-9]+", ln)]
        return tuple(ok[:1]) if ok else "no st_dev of the mount"

    def storage(self, spec: NfsAttach) -> tuple:
        return (self.protocol, spec.server, spec.export)


INITIATOR = NfsInitiator("nfs", "mount.nfs", "nfs", "nfs-common", mounted=True)
