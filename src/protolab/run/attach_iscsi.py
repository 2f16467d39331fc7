"""iSCSI's attach and detach scripts (iscsiadm, open-iscsi's sysfs): see run.attaching.

Each run logs in through an open-iscsi iface of its own, ``protolab-<run key>``, so a detach logs out that run's
sessions and no other's: neither the host's own nor those of another run of protolab.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..plan.attach import IscsiAttach
from .attach_sh import BLKID, IDENT, IDENTS, PATH, WAIT
from .hostinit import HostInitiator

#: open-iscsi keeps iface names in a char[ISCSI_MAX_IFACE_LEN = 65]: this is 25 characters
IFACE_PREFIX = "protolab-"


def iface(run_key: str) -> str:
    """The open-iscsi iface of a run's node records and sessions."""
    return f"{IFACE_PREFIX}{run_key[:16]}"


def kernel_lun(lun: int) -> int:
    """The LUN as Linux numbers it in H:C:T:L when the target reports it with SAM's flat space addressing (from
    256: 0x4000 | LUN, as scsilun_to_int keeps the bits); the script also looks under the plain number."""
    return lun if lun < 256 else 0x4000 | lun


def _vars(s: IscsiAttach, run_key: str) -> str:
    q = shlex.quote
    portal = f"[{s.host}]:{s.port}" if ":" in s.host else f"{s.host}:{s.port}"
    return f"T={q(s.iqn)}; PT={q(portal)}; L={s.lun}; L2={kernel_lun(s.lun)}; S={s.sessions}; I={q(iface(run_key))}"


_ALL = """all() { for s in /sys/class/iscsi_session/session*; do \
[ "$(cat "$s/targetname" 2>/dev/null)" = "$T" ] && echo "${s##*/}"; done; }"""
_OURS = """ours() { for s in $(all); do [ "$(cat "/sys/class/iscsi_session/$s/ifacename" 2>/dev/null)" = "$I" ] \
&& echo "$s"; done; }"""


def attach(s: IscsiAttach, run_key: str) -> str:
    return "\n".join([PATH, _vars(s, run_key), _ALL, _OURS, IDENT, """\
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
                      WAIT.format(want="$S", what="login to $T at $PT"),
                      'for s in $(ours); do iscsiadm -m session -r "${s#session}" -P 3 2>&1 | sed "s/^/kernel /"; done',
                      IDENTS, BLKID])


def detach(s: IscsiAttach, run_key: str) -> str:
    return "\n".join([PATH, _vars(s, run_key), _ALL, _OURS, """\
iscsiadm -m node -T "$T" -p "$PT" -I "$I" --logout >/dev/null 2>&1
iscsiadm -m node -T "$T" -p "$PT" -I "$I" -o delete >/dev/null 2>&1
[ -z "$(ours)" ] || { echo "error still logged in to $T ($(ours | tr '\\n' ' '))"; exit 6; }
iscsiadm -m node -I "$I" 2>/dev/null | grep -q . || iscsiadm -m iface -I "$I" -o delete >/dev/null 2>&1
exit 0"""])


#: what a session's `iscsiadm -P 3` account is summed up by, in this order
ISCSI_KEYS = ("Current Portal", "iSCSI Session State", "HeaderDigest", "DataDigest", "MaxRecvDataSegmentLength",
              "MaxXmitDataSegmentLength", "FirstBurstLength", "MaxBurstLength", "ImmediateData", "InitialR2T",
              "Attached scsi disk")


@dataclass(frozen=True)
class IscsiInitiator(HostInitiator):
    def attach(self, spec: IscsiAttach, mount: str, run_key: str) -> str:
        return attach(spec, run_key)

    def detach(self, spec: IscsiAttach, mount: str, ids: tuple[str, ...] | None, run_key: str) -> str:
        return detach(spec, run_key)

    def storage(self, spec: IscsiAttach) -> tuple:
        return (self.protocol, spec.iqn, spec.lun)

    def summary(self, kernel: str) -> list[str]:
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


INITIATOR = IscsiInitiator("iscsi", "iscsiadm", "iscsi_tcp", "open-iscsi")
