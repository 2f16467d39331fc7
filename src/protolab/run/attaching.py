"""A target's kernel attach on a load host (plan.attach), and its detach: the adapter for iscsiadm, mount.nfs and
nvme-cli.

Each attach is one fixed shell script run through the host's shell (run.hostshell: this machine, or ssh). Plan
values reach it as shell variables, quoted with shlex after plan.attach checked them. The script

- refuses (exit 3) when the host already has that target (a session to the IQN, a controller of the NQN, a
  mount of the export): protolab detaches only what it attached, so it never attaches over the user's own;
- attaches (iscsiadm through protolab's own open-iscsi iface with node.session.nr_sessions; mount.nfs with
  nosuid,nodev,noexec on a root-only mount point under /run/protolab-attach; nvme connect with its I/O queues,
  the controllers it made written beside the mount points for a detach that was not told them);
- finds the result by its identifiers, never by guessing a name: the SCSI disks of the sessions whose
  targetname is the IQN and whose LUN is the plan's (sysfs), the namespace of the subsystem whose subsysnqn is the
  NQN, the mount point it made;
- prints what the kernel reports of it (``iscsiadm -m session -r SID -P 3``, the line of /proc/mounts, the
  controllers' sysfs and ``nvme list-subsys``) and what the device or file holds (blkid's signature, or the
  data file's size when protolab's marker is not beside it) for the overwrite rule.

Its output is lines of ``device PATH``, ``kernel TEXT``, ``found TEXT`` and ``error TEXT``.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import TargetError, ToolError
from ..plan.attach import Attach, IscsiAttach, NfsAttach, NvmeTcpAttach
from ..proc import Runner
from .hostshell import HostShell, Unreachable

#: where protolab mounts NFS exports on a host (root's tmpfs, made 0700; never a name another user could take)
ATTACH_DIR = "/run/protolab-attach"
TIMEOUT_S = 120.0
ALREADY, FAILED, NO_DEVICE = 3, 4, 5
DETACH_TRIES, DETACH_RETRY_S = 3, 2.0
MAX_KERNEL_TEXT = 64 * 1024

_PATH = 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"'
_WAIT = """i=0
until devs=$(devices) && [ "$(echo "$devs" | grep -c /dev/)" -ge {want} ]; do
    i=$((i + 1)); [ $i -lt 150 ] || {{ echo "error {what} gave $(echo "$devs" | grep -c /dev/) of {want} device(s) in \
30 s"; exit 5; }}
    sleep 0.2
done
for d in $devs; do echo "device $d"; done"""
_BLKID = """for d in $devs; do
    sig=$( (blkid -p -o export "$d" 2>/dev/null || blkid "$d" 2>/dev/null) | grep -oE '(PT)?TYPE="?[A-Za-z0-9_]+' \
| tr -d '"' | tr '\\n' ' ')
    echo "found $d ${sig:-no signature}"
done"""


@dataclass(frozen=True)
class Attached:
    """One target attached on one host: its devices (or the data file in its mount), what the kernel reports."""

    host: str
    target: str
    protocol: str
    asked: str  # the attach as the plan asks it (Attach.describe)
    devices: tuple[str, ...]
    kernel: str
    found: tuple[str, ...] = field(default_factory=tuple)
    ids: tuple[str, ...] = ()  # what the detach must touch: the NVMe controllers it connected

    def record(self) -> dict[str, Any]:
        """What the run directory keeps (the manifest's ``attached``)."""
        return {"host": self.host, "target": self.target, "protocol": self.protocol, "asked": self.asked,
                "devices": list(self.devices), "kernel": self.kernel[:MAX_KERNEL_TEXT],
                "summary": summary(self.protocol, self.kernel), "found": list(self.found)}


#: what a session's `iscsiadm -P 3` account is summed up by, in this order
ISCSI_KEYS = ("Current Portal", "iSCSI Session State", "HeaderDigest", "DataDigest", "MaxRecvDataSegmentLength",
              "MaxXmitDataSegmentLength", "FirstBurstLength", "MaxBurstLength", "ImmediateData", "InitialR2T",
              "Attached scsi disk")


def summary(protocol: str, kernel: str) -> list[str]:
    """The kernel's account in a line per session, controller or mount (the report's short form)."""
    if protocol == "iscsi":
        out = []
        for chunk in kernel.split("iSCSI Transport Class version")[1:]:
            seen: dict[str, str] = {}
            for ln in chunk.splitlines():
                disk = re.search(r"Attached scsi disk (\S+)", ln)
                if disk:
                    seen.setdefault("Attached scsi disk", disk.group(1))
                key, sep, value = ln.strip().partition(":")
                if sep and key.strip() in (*ISCSI_KEYS, "SID") and key.strip() not in seen:
                    seen[key.strip()] = value.strip().split("\t")[0].split(" State:")[0].strip()
            if "SID" in seen:
                out.append(f"session {seen['SID']}: " + ", ".join(f"{k} {seen[k]}" for k in ISCSI_KEYS if k in seen))
        return out
    if protocol == "nvme-tcp":
        return [ln for ln in kernel.splitlines() if re.match(r"nvme\d+: ", ln)]
    return [ln for ln in kernel.splitlines() if ln.strip()]


def mount_point(run_id: str, host: str, target: str) -> str:
    """The NFS mount point of a (run, host, target): under ATTACH_DIR, a name made of no plan text."""
    return f"{ATTACH_DIR}/{hashlib.sha256(f'{run_id}|{host}|{target}'.encode()).hexdigest()[:16]}"


def _iscsi_vars(s: IscsiAttach) -> str:
    q = shlex.quote
    portal = f"[{s.host}]:{s.port}" if ":" in s.host else f"{s.host}:{s.port}"
    return f"T={q(s.iqn)}; PT={q(portal)}; L={s.lun}; L2={kernel_lun(s.lun)}; S={s.sessions}; I={ISCSI_IFACE}"


def kernel_lun(lun: int) -> int:
    """The LUN as Linux numbers it in H:C:T:L when the target reports it with SAM's flat space addressing (from
    256: 0x4000 | LUN, as scsilun_to_int keeps the bits); the script also looks under the plain number."""
    return lun if lun < 256 else 0x4000 | lun


#: the open-iscsi interface protolab's node records and sessions use: its logout touches no session of the host's own
ISCSI_IFACE = "protolab"
_ISCSI_ALL = """all() { for s in /sys/class/iscsi_session/session*; do \
[ "$(cat "$s/targetname" 2>/dev/null)" = "$T" ] && echo "${s##*/}"; done; }"""
_ISCSI_OURS = """ours() { for s in $(all); do [ "$(cat "/sys/class/iscsi_session/$s/ifacename" 2>/dev/null)" = "$I" ] \
&& echo "$s"; done; }"""


def _iscsi_attach(s: IscsiAttach) -> str:
    return "\n".join([_PATH, _iscsi_vars(s), _ISCSI_ALL, _ISCSI_OURS, """\
[ -z "$(all)" ] || { echo "error already logged in to $T ($(all | tr '\\n' ' '))"; exit 3; }
step() { out=$("$@" 2>&1) || { echo "error $1 $2 $3: $(echo "$out" | tail -n 1)"; exit 4; }; }
iscsiadm -m iface -I "$I" >/dev/null 2>&1 || step iscsiadm -m iface -I "$I" -o new
iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o delete >/dev/null 2>&1  # a record of ours with no session: stale
step iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o new
step iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o update -n node.startup -v manual
step iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o update -n node.session.nr_sessions -v "$S"
step iscsiadm -m node -T "$T" -p "$PT" -I "$I" --login
devices() { for s in $(ours); do for b in /sys/class/iscsi_session/$s/device/target*/*:"$L"/block/* \
/sys/class/iscsi_session/$s/device/target*/*:"$L2"/block/*; do [ -b "/dev/${b##*/}" ] && echo "/dev/${b##*/}"; done; \
done | sort -u; }""",
                      _WAIT.format(want="$S", what="login to $T at $PT"),
                      'for s in $(ours); do iscsiadm -m session -r "${s#session}" -P 3 2>&1 | sed "s/^/kernel /"; done',
                      _BLKID])


def _iscsi_detach(s: IscsiAttach) -> str:
    return "\n".join([_PATH, _iscsi_vars(s), _ISCSI_ALL, _ISCSI_OURS, """\
iscsiadm -m node -T "$T" -p "$PT" -I "$I" --logout >/dev/null 2>&1
iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o delete >/dev/null 2>&1
[ -z "$(ours)" ] || { echo "error still logged in to $T ($(ours | tr '\\n' ' '))"; exit 6; }
iscsiadm -m node -I "$I" 2>/dev/null | grep -q . || iscsiadm -m iface -I "$I" -o delete >/dev/null 2>&1
exit 0"""])


def _nvme_vars(s, mount: str) -> str:
    q = shlex.quote
    return f"N={q(s.nqn)}; A={q(s.address)}; P={s.port}; NS={s.nsid}; D={q(ATTACH_DIR)}; IDS={q(mount + '.ids')}"


_NVME_OURS = """ours() { for c in /sys/class/nvme/nvme*; do \
[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$N" ] && echo "${c##*/}"; done; }"""


def _nvme_attach(s, mount: str) -> str:
    queues = f" -i {s.queues}" if s.queues else ""
    return "\n".join([_PATH, _nvme_vars(s, mount), _NVME_OURS, f"""\
[ -z "$(ours)" ] || {{ echo "error already has a controller of $N ($(ours | tr '\\n' ' '))"; exit 3; }}
[ ! -L "$D" ] && mkdir -p "$D" && chmod 700 "$D" || {{ echo "error cannot make $D (a link, or not writable)"; exit 4; }}
out=$(nvme connect -t tcp -a "$A" -s "$P" -n "$N"{queues} 2>&1) || {{ echo "error nvme connect: $(echo "$out" \
| tail -n 1)"; exit 4; }}
ours > "$IDS"  # what this attach connected, for a detach that was not told (a kill before protolab listed it)
for c in $(ours); do echo "id $c"; done""", """\
devices() { {
    for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$N" ] || continue
        for b in "$s"/nvme*n"$NS"; do [ -b "/dev/${b##*/}" ] && echo "/dev/${b##*/}"; done; done
    for c in $(ours); do for b in /sys/class/nvme/$c/nvme*n"$NS"; do case "${b##*/}" in *c*) continue ;; esac
        [ -b "/dev/${b##*/}" ] && echo "/dev/${b##*/}"; done; done
} | sort -u; }""", _WAIT.format(want=1, what="connect to $N at $A:$P"), """\
for c in $(ours); do q=$(cat "/sys/class/nvme/$c/queue_count" 2>/dev/null)
    echo "kernel $c: $(cat "/sys/class/nvme/$c/transport") $(cat "/sys/class/nvme/$c/address"), \
${q:+$((q - 1)) I/O queues, }state $(cat "/sys/class/nvme/$c/state")"
done
nvme list-subsys $(echo "$devs" | head -1) 2>&1 | sed 's/^/kernel /'""", _BLKID])


def _nvme_detach(s, mount: str, ids: tuple[str, ...] | None) -> str:
    """Delete the controllers protolab connected: ``ids``, or when not known (a kill before protolab listed them)
    those the attach wrote on the host; never another controller of the NQN."""
    pick = " ".join(c for c in ids or () if re.fullmatch(r"nvme[0-9]+", c))
    known = f"C={shlex.quote(pick)}" if ids is not None else 'C=$(cat "$IDS" 2>/dev/null | grep -x "nvme[0-9]*")'
    return "\n".join([_PATH, _nvme_vars(s, mount), _NVME_OURS, known,
                      """\
for c in $C; do [ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "$N" ] || continue
    nvme disconnect -d "$c" >/dev/null 2>&1 || echo 1 > "/sys/class/nvme/$c/delete_controller" 2>/dev/null; done
left=$(for c in $C; do [ "$(cat "/sys/class/nvme/$c/subsysnqn" 2>/dev/null)" = "$N" ] && echo "$c"; done)
[ -z "$left" ] || { echo "error still connected to $N ($(echo $left))"; exit 6; }""", 'rm -f "$IDS"'])


def nfs_options(s: NfsAttach) -> str:
    """mount -o: the plan's options, nosuid, nodev and noexec (nothing on the export acts on the host), and nolock
    for NFSv3 (fio's streams take disjoint regions: no lock manager)."""
    return s.options() + ",nosuid,nodev,noexec" + (",nolock" if s.version == "3" else "")


def _nfs_vars(s: NfsAttach, mount: str) -> str:
    q = shlex.quote
    source = f"[{s.server}]:{s.export}" if ":" in s.server else f"{s.server}:{s.export}"
    return f"M={q(mount)}; SRC={q(source)}; O={q(nfs_options(s))}; F={q(s.file)}; D={q(ATTACH_DIR)}"


def _nfs_attach(s: NfsAttach, mount: str) -> str:
    return "\n".join([_PATH, _nfs_vars(s, mount), """\
grep -q " $M " /proc/mounts && { echo "error $M is mounted already (left by a run of protolab that was killed: \
umount $M)"; exit 3; }
awk -v s="$SRC" '$1 == s {f=1} END {exit !f}' /proc/mounts && { echo "error $SRC is mounted already: a second mount \
would share its client, and not take the plan's options"; exit 3; }
[ ! -L "$D" ] && mkdir -p "$D" && chmod 700 "$D" || { echo "error cannot make $D (a link, or not writable)"; exit 4; }
[ ! -L "$M" ] && { [ -d "$M" ] || mkdir "$M"; } || { echo "error cannot make $M"; exit 4; }
if command -v mount.nfs >/dev/null; then out=$(mount.nfs "$SRC" "$M" -o "$O" 2>&1)
else out=$(mount -t nfs -o "$O" "$SRC" "$M" 2>&1); fi || { echo "error mount: $(echo "$out" | tail -n 1)"; rmdir "$M"; \
exit 4; }
echo "device $M/$F"
grep " $M " /proc/mounts | sed 's/^/kernel /'
for p in "$M/$F" "$M/$F.protolab"; do
    if [ -L "$p" ] || { [ -e "$p" ] && [ ! -f "$p" ]; }; then
        echo "error $p is a link or not a plain file: protolab writes only a plain file of its own"
        umount "$M"; rmdir "$M"; exit 4
    fi
done
if [ -s "$M/$F" ] && [ ! -f "$M/$F.protolab" ]; then
    echo "found $M/$F holds $(wc -c < "$M/$F") bytes protolab did not write"
elif [ ! -e "$M/$F.protolab" ]; then
    (set -C; echo '{"created_by": "protolab"}' > "$M/$F.protolab") 2>/dev/null
fi"""])


def _nfs_detach(mount: str) -> str:
    return "\n".join([_PATH, f"M={shlex.quote(mount)}", """\
if grep -q " $M " /proc/mounts; then out=$(umount "$M" 2>&1) || { echo "error umount: $out"; exit 6; }; fi
[ ! -d "$M" ] || rmdir "$M" """])


def attach_script(a: Attach, mount: str) -> str:
    s = a.spec
    if isinstance(s, IscsiAttach):
        return _iscsi_attach(s)
    if isinstance(s, NfsAttach):
        return _nfs_attach(s, mount)
    return _nvme_attach(s, mount)


def detach_script(a: Attach, mount: str, ids: tuple[str, ...] | None = None) -> str:
    s = a.spec
    if isinstance(s, IscsiAttach):
        return _iscsi_detach(s)
    if isinstance(s, NfsAttach):
        return _nfs_detach(mount)
    return _nvme_detach(s, mount, ids)


def storage_of(a: Attach) -> tuple:
    """The storage an attach reaches, whatever its options: one IQN (a host holds one login to it; attach refuses
    a second), one NQN, one server's export."""
    s = a.spec
    if isinstance(s, IscsiAttach):
        return ("iscsi", s.iqn, s.lun)
    if isinstance(s, NfsAttach):
        return ("nfs", s.server, s.export)
    return ("nvme-tcp", s.nqn, s.nsid)


def same_storage(a: Attach | None, b: Attach | None) -> bool:
    """Whether two attaches reach the same storage connection (one host holds one attach of it at a time)."""
    return a is not None and b is not None and storage_of(a)[:2] == storage_of(b)[:2]


class AlreadyAttached(ToolError):
    """The host has the target already (its own): nothing was attached, nothing is to be detached."""


def _fewer_queues(a: Attach, kernel: str) -> tuple[str, ...]:
    """NVMe/TCP: the I/O queues the kernel gave when fewer than the plan asked (it gives at most one per CPU)."""
    asked = a.spec.queues if isinstance(a.spec, NvmeTcpAttach) else None
    gave = [int(n) for n in re.findall(r"(\d+) I/O queues", kernel)]
    if asked and gave and min(gave) < asked:
        return (f"the kernel gave {min(gave)} of the {asked} I/O queues asked (nvme-tcp makes at most one per "
                "CPU of the host)",)
    return ()


def _lines(output: str, kind: str) -> list[str]:
    return [ln[len(kind) + 1:] for ln in output.splitlines() if ln.startswith(kind + " ")]


@dataclass
class Attacher:
    """Attaches and detaches targets on hosts through their shells (``netns``: where ssh runs, for tests)."""

    runner: Runner
    run_id: str
    netns: str | None = None
    timeout: float = TIMEOUT_S
    sleep: Callable[[float], None] = time.sleep

    def attach(self, shell: HostShell, target: str, a: Attach, *, allow_overwrite: bool) -> Attached:
        """Attach ``a`` on ``shell``'s host as target ``target``; ToolError (one line) when it cannot, TargetError
        when the device or file holds data the plan did not opt in to overwrite. Whatever it attached before
        failing is detached again."""
        mount = mount_point(self.run_id, shell.name, target)
        done = shell.run(self.runner, attach_script(a, mount), timeout=self.timeout, netns=self.netns)
        errors = _lines(done.stdout, "error")
        why = errors[-1] if errors else done.one_line_error()
        if done.returncode == ALREADY:  # the host's own: nothing of it is touched
            raise AlreadyAttached(f"host {shell.name}: target {target} ({a.describe()}): {why}; protolab attaches and "
                            "detaches only its own: detach it there first, or give its device as url")
        devices = tuple(_lines(done.stdout, "device"))
        if done.returncode != 0 or not devices:
            self._undo(shell, target, a, tuple(_lines(done.stdout, "id")))
            raise ToolError(f"host {shell.name}: target {target} ({a.describe()}): {why}")
        found = tuple(_lines(done.stdout, "found"))
        kernel = "\n".join(_lines(done.stdout, "kernel"))
        attached = Attached(shell.name, target, a.protocol, a.describe(), devices, kernel,
                            found + _fewer_queues(a, kernel), tuple(_lines(done.stdout, "id")))
        held = [f for f in found if isinstance(a.spec, NfsAttach) or not f.endswith(" no signature")]
        if held and not allow_overwrite:
            self._undo(shell, target, a, attached.ids)
            raise TargetError(f"host {shell.name}: target {target}: {held[0]}; add allow_overwrite = true to the "
                              "target if its contents may be destroyed")
        return attached

    def _undo(self, shell: HostShell, target: str, a: Attach, ids: tuple[str, ...] | None = None) -> None:
        try:
            self.detach(shell, target, a, ids or None)
        except ToolError:
            pass  # the error that brought us here is the one to show; detach names itself when run again

    def detach(self, shell: HostShell, target: str, a: Attach, ids: tuple[str, ...] | None = None) -> None:
        """Detach ``a`` from the host (nothing to do when it is not attached; ``ids``: the NVMe controllers it
        connected, when known); ToolError naming the host and the exact command to run there when it cannot."""
        script = detach_script(a, mount_point(self.run_id, shell.name, target), ids)
        for attempt in range(DETACH_TRIES):
            try:
                done = shell.run(self.runner, script, timeout=self.timeout, netns=self.netns)
                break
            except Unreachable as e:  # e.g. a signal ended the attach's ssh a moment ago and the host dropped this one
                if attempt + 1 == DETACH_TRIES or not e.why.startswith("ssh failed"):  # a silent host: not waited for
                    raise ToolError(f"{e}; then detach target {target} there: {shell.by_hand(script)}") from None
                self.sleep(DETACH_RETRY_S)
        if done.returncode != 0:
            errors = _lines(done.stdout, "error")
            raise ToolError(f"host {shell.name}: target {target}: {errors[-1] if errors else done.one_line_error()}; "
                            f"detach it there: {shell.by_hand(script)}")
