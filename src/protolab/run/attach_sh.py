"""The shell pieces the attach, detach and check scripts of every protocol share (run.attach_iscsi, attach_nvme,
attach_nfs): the search path, the wait for devices, the signature probe, and a disk's identity.

A disk's identity is one line the same function prints at attach and before every window: its major:minor (the
/dev node's, which must be the sysfs name's), the inode of its sysfs directory (kernfs numbers them cyclically: a
disk made again under the same name and numbers has another), what the device says it is (``wwid``, the SCSI
device's or the NVMe namespace's, the controller's or subsystem's ``serial`` and ``subsysnqn``) and, for a disk
behind an iSCSI session, that session's iface and target. /dev/disk/by-id needs udev, which a host need not run.
"""

from __future__ import annotations

import shlex

#: where protolab mounts NFS exports and keeps what a host's detach reads (root's tmpfs, made 0700)
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
