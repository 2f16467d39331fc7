"""The shell pieces the attach, detach and check scripts of every protocol share (run.attach_iscsi, attach_nvme,
attach_nfs, attach_smb): the search path, the wait for devices, the signature probe, a disk's identity, and a mounted
target's attach around its mount command, its check and its unmount.

A disk's identity is one line the same function prints at attach and before every window: its major:minor (the
/dev node's, which must be the sysfs name's), the inode of its sysfs directory (kernfs numbers them cyclically: a
disk made again under the same name and numbers has another), what the device says it is (``wwid``, the SCSI
device's or the NVMe namespace's, the controller's or subsystem's ``serial`` and ``subsysnqn``) and, for a disk
behind an iSCSI session, that session's iface and target. /dev/disk/by-id needs udev, which a host need not run.
"""

from __future__ import annotations

import re
import shlex

#: where protolab mounts file exports and shares and keeps what a host's detach reads (root's tmpfs, made 0700)
ATTACH_DIR = "/run/protolab-attach"
ALREADY, FAILED, NO_DEVICE, NOT_DETACHED, CHANGED = 3, 4, 5, 6, 7

PATH = 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"'
WAIT = """i=0
until devs=$(devices) && [ "$(echo "$devs" | grep -c /dev/)" -ge {want} ]; do
    i=$((i + 1)); [ $i -lt 150 ] || {{ echo "error {what} gave $(echo "$devs" | grep -c /dev/) of {want} device(s) in \
30 s"; exit 5; }}
    sleep 0.2
done
for d in $devs; do echo "device $d"; done"""
BLKID = """for d in $devs; do
    sig=$( (blkid -p -o export "$d" 2>/dev/null || blkid "$d" 2>/dev/null) | grep -oE '(PT)?TYPE="?[A-Za-z0-9_]+' \
| tr -d '"' | tr '\\n' ' ')
    echo "found $d ${sig:-no signature}"
done"""
IDENT = """ident() {
    n=${1##*/}; mm=$(cat "/sys/class/block/$n/dev" 2>/dev/null) || { echo "gone"; return; }
    set -- $(stat -L -c '%t %T' "/dev/$n" 2>/dev/null)
    [ $# -eq 2 ] && [ "$(printf '%d:%d' "0x$1" "0x$2")" = "$mm" ] || { echo "no block node $mm"; return; }
    s=$(readlink -f "/sys/dev/block/$mm")
    printf '%s ino=%s' "$mm" "$(stat -c %i "$s")"
    for f in wwid device/wwid device/serial device/subsysnqn; do
        [ -r "$s/$f" ] && printf ' %s=%s' "${f#device/}" "$(sed 's/  */ /g; s/ $//' "$s/$f" 2>/dev/null)"; done
    case "$s" in */session[0-9]*/*) x=${s#*/session}; x=/sys/class/iscsi_session/session${x%%/*}
        printf ' iface=%s target=%s' "$(cat "$x/ifacename" 2>/dev/null)" "$(cat "$x/targetname" 2>/dev/null)";; esac
    echo
}"""
#: at attach, after ``devs``: each device's identity, the line the checks compare
IDENTS = """for d in $devs; do echo "ident $d $(ident "$d")"; done"""


def check_disks(idents: tuple[str, ...]) -> str:
    """The check before a window of an attached block target: each device still the disk it was at attach."""
    lines = []
    for line in idents:
        dev, _, want = line.partition(" ")
        lines.append(f"same {shlex.quote(dev)} {shlex.quote(want)}")
    return "\n".join([PATH, IDENT, """\
bad=0
same() { now=$(ident "$1"); [ "$now" = "$2" ] && return
    echo "error $1 is no longer the disk this run attached (attached: $2; now: $now)"; bad=1; }""", *lines,
                      f'[ $bad -eq 0 ] || exit {CHANGED}'])


def disk_identities(idents: list[str], devices: tuple[str, ...]) -> tuple[str, ...] | str:
    """The ``ident`` lines of an attach, one per device, or why they do not identify each device."""
    by_dev = {ln.partition(" ")[0]: ln for ln in idents}
    for d in devices:
        line = by_dev.get(d)
        want = line.partition(" ")[2] if line else ""
        if not want or not want.split(" ", 1)[0].replace(":", "").isdigit() or " ino=" not in want:
            return f"{d}: no identity ({want or 'none'})"
    return tuple(by_dev[d] for d in devices)


#: what a mounted target's mount must show in /proc/mounts: nothing on the export acts on the host, no link on it is
#: followed
FLAGS = ("nosuid", "nodev", "noexec", "nosymfollow")
#: the mount's flags, each of FLAGS present (0) or not, from the last line of /proc/mounts for $M
FLAGGED = f"""flagged() {{ o=$(awk -v m="$M" '$2 == m {{o = $4}} END {{print o}}' /proc/mounts)
    for f in {' '.join(FLAGS)}; do case ",$o," in *,$f,*) ;; *) return 1 ;; esac; done; }}"""
#: before the mount: neither the mount point nor the source ($SRC) mounted already, the mount point made
BEFORE_MOUNT = """\
grep -q " $M " /proc/mounts && { echo "error $M is mounted already (left by a run of protolab that was killed: \
umount $M)"; exit 3; }
awk -v s="$SRC" '$1 == s {f=1} END {exit !f}' /proc/mounts && { echo "error $SRC is mounted already: a second mount \
would share its client, and not take the plan's options"; exit 3; }
[ ! -L "$D" ] && mkdir -p "$D" && chmod 700 "$D" || { echo "error cannot make $D (a link, or not writable)"; exit 4; }
[ ! -L "$M" ] && { [ -d "$M" ] || mkdir "$M"; } || { echo "error cannot make $M"; exit 4; }"""
#: after the mount: nosymfollow by a bind remount, the mount's line (``{kernel}``: a sed script that drops what may not
#: be recorded), the data file $F (plain or absent) and the mount's st_dev, what the file holds, protolab's marker
AFTER_MOUNT = """\
out=$(mount -o remount,bind,nosuid,nodev,noexec,nosymfollow "$M" 2>&1)
flagged || {{ echo "error $M: could not be made nosymfollow (Linux 5.10 and util-linux mount are needed): \
$(echo "$out" | tail -n 1)"; umount "$M"; rmdir "$M"; exit 4; }}
echo "device $M/$F"
grep " $M " /proc/mounts | sed '{kernel}s/^/kernel /'
for p in "$M/$F" "$M/$F.protolab"; do
    if [ -L "$p" ] || {{ [ -e "$p" ] && [ ! -f "$p" ]; }}; then
        echo "error $p is a link or not a plain file: protolab writes only a plain file of its own"
        umount "$M"; rmdir "$M"; exit 4
    fi
done
echo "ident $M/$F dev=$(stat -c %d "$M")"
if [ -s "$M/$F" ] && [ ! -f "$M/$F.protolab" ]; then
    echo "found $M/$F holds $(wc -c < "$M/$F") bytes protolab did not write"
elif [ ! -e "$M/$F.protolab" ]; then
    (set -C; echo '{{"created_by": "protolab"}}' > "$M/$F.protolab") 2>/dev/null
fi"""


def mounted_attach(variables: str, mount: str, before: str = "", kernel: str = "") -> str:
    """A mounted target's attach script: ``variables`` sets M (the mount point), SRC (the source as /proc/mounts
    shows it), F (the data file), D (ATTACH_DIR) and what ``mount`` uses; ``before`` refuses first (nothing made
    yet); ``mount`` mounts $SRC on $M with nosuid,nodev,noexec (or says why, removes $M and exits 4); ``kernel``:
    sed commands (each ending in ';') that drop from the mount's line what may not be recorded."""
    return "\n".join([PATH, variables, FLAGGED, *([before] if before else []), BEFORE_MOUNT, mount,
                      AFTER_MOUNT.format(kernel=kernel)])


def check_mount(idents: tuple[str, ...]) -> str:
    """The check before a window of a mounted target (``idents``: 'MOUNT/FILE dev=N'): the mount there, alone, with
    FLAGS and its st_dev recorded, and its data file a plain file on it, or not there yet (fio makes it:
    nosymfollow stops a link swapped in after)."""
    path, _, dev = idents[0].partition(" dev=")
    mount, _, file = path.rpartition("/")
    q = shlex.quote
    return "\n".join([PATH, f"M={q(mount)}; F={q(file)}; DEV={q(dev)}", FLAGGED, f"""\
p="$M/$F"
fail() {{ echo "error $*"; exit {CHANGED}; }}
[ "$(awk -v m="$M" '$2 == m' /proc/mounts | wc -l)" -eq 1 ] || fail "$M is not this run's mount alone any more"
flagged || fail "$M is no longer mounted nosuid,nodev,noexec,nosymfollow"
[ "$(stat -c %d "$M")" = "$DEV" ] || fail "$M is no longer the file system this run mounted"
[ ! -L "$p" ] || fail "$p is now a symbolic link (the export's contents changed)"
[ ! -e "$p" ] || [ -f "$p" ] || fail "$p is no longer a plain file (the export's contents changed)"
[ ! -e "$p" ] || [ "$(stat -c %d "$p")" = "$DEV" ] || fail "$p is not on this run's mount\""""])


def unmount(mount: str) -> str:
    """The detach of a mounted target: this run's mount point (named by no plan text) unmounted and removed."""
    return "\n".join([PATH, f"M={shlex.quote(mount)}", """\
if grep -q " $M " /proc/mounts; then out=$(umount "$M" 2>&1) || { echo "error umount: $out"; exit 6; }; fi
[ ! -d "$M" ] || rmdir "$M" """])


def mount_identities(idents: list[str]) -> tuple[str, ...] | str:
    """The mount's st_dev, from the attach's 'ident MOUNT/FILE dev=N' line; or why there is none."""
    ok = [ln for ln in idents if re.fullmatch(r"\S+ dev=[0-9]+", ln)]
    return tuple(ok[:1]) if ok else "no st_dev of the mount"
