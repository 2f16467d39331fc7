"""NVMe/TCP's attach and detach scripts (nvme-cli, the nvme and nvme-subsystem sysfs classes): see run.attaching.

A controller's name (nvmeX) is reused as soon as it is free: after a kill, the user's own connect may get the
name this run's controller had. So the attach records each controller it connected by what the kernel says of
it — its name, cntlid, the inode of its sysfs directory (kernfs numbers them cyclically: a controller made again
has another), subsystem NQN, host NQN and transport address — and the detach disconnects a controller only when
all of these are still what was recorded; any other is reported and left alone.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..plan.attach import NvmeTcpAttach
from .attach_sh import ATTACH_DIR, BLKID, IDENT, IDENTS, PATH, WAIT
from .hostinit import HostInitiator

#: a controller as the attach recorded it: the name, then what identifies it
CONTROLLER = re.compile(r"nvme[0-9]+ cntlid=[0-9]* ino=[0-9]+ subsysnqn=\S* hostnqn=\S* address=\S*")


def _vars(s: NvmeTcpAttach, mount: str) -> str:
    q = shlex.quote
    return f"N={q(s.nqn)}; A={q(s.address)}; P={s.port}; NS={s.nsid}; D={q(ATTACH_DIR)}; IDS={q(mount + '.ids')}"


_OURS = """ours() { for c in /sys/class/nvme/nvme*; do \
[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$N" ] && echo "${c##*/}"; done; }"""
_CID = """cid() { d=/sys/class/nvme/$1; printf '%s cntlid=%s ino=%s subsysnqn=%s hostnqn=%s address=%s\\n' "$1" \
"$(cat "$d/cntlid" 2>/dev/null)" "$(stat -L -c %i "$d" 2>/dev/null)" "$(cat "$d/subsysnqn" 2>/dev/null)" \
"$(cat "$d/hostnqn" 2>/dev/null)" "$(cat "$d/address" 2>/dev/null | tr -d ' ')"; }"""


def attach(s: NvmeTcpAttach, mount: str) -> str:
    queues = f" -i {s.queues}" if s.queues else ""
    return "\n".join([PATH, _vars(s, mount), _OURS, _CID, IDENT, f"""\
[ -z "$(ours)" ] || {{ echo "error already has a controller of $N ($(ours | tr '\\n' ' '))"; exit 3; }}
[ ! -L "$D" ] && mkdir -p "$D" && chmod 700 "$D" || {{ echo "error cannot make $D (a link, or not writable)"; exit 4; }}
out=$(nvme connect -t tcp -a "$A" -s "$P" -n "$N"{queues} 2>&1) || {{ echo "error nvme connect: $(echo "$out" \
| tail -n 1)"; exit 4; }}
for c in $(ours); do cid "$c"; done > "$IDS"  # what it connected, for a detach that was not told (a kill)""", \
                      """sed 's/^/id /' "$IDS"
devices() { {
    for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$N" ] || continue
        for b in "$s"/nvme*n"$NS"; do [ -b "/dev/${b##*/}" ] && echo "/dev/${b##*/}"; done; done
    for c in $(ours); do for b in /sys/class/nvme/$c/nvme*n"$NS"; do case "${b##*/}" in *c*) continue ;; esac
        [ -b "/dev/${b##*/}" ] && echo "/dev/${b##*/}"; done; done
} | sort -u; }""", WAIT.format(want=1, what="connect to $N at $A:$P"), """\
for c in $(ours); do q=$(cat "/sys/class/nvme/$c/queue_count" 2>/dev/null)
    echo "kernel $c: $(cat "/sys/class/nvme/$c/transport") $(cat "/sys/class/nvme/$c/address"), \
${q:+$((q - 1)) I/O queues, }state $(cat "/sys/class/nvme/$c/state")"
done
nvme list-subsys $(echo "$devs" | head -1) 2>&1 | sed 's/^/kernel /'""", IDENTS, BLKID])


def detach(s: NvmeTcpAttach, mount: str, ids: tuple[str, ...] | None) -> str:
    """Disconnect the controllers this run connected — ``ids``, or when not known (a kill before protolab listed
    them) those the attach wrote on the host — each only while it is still the very controller recorded."""
    if ids is None:
        known = 'C=$(tr \'\\n\' \'\\t\' < "$IDS" 2>/dev/null)'
    else:  # a record per tab (the by-hand command stays one line); an older list's bare name is never acted on
        known = f"C={shlex.quote(chr(9).join(i for i in ids if CONTROLLER.fullmatch(i)))}"
    return "\n".join([PATH, _vars(s, mount), _CID, known, """\
left=; o=$IFS; set -f; IFS=$(printf '\t')
for want in $C; do IFS=$o; c=${want%% *}
    case "$c" in nvme[0-9]*) ;; *) continue ;; esac
    [ -e "/sys/class/nvme/$c" ] || continue
    now=$(cid "$c"); [ "$now" = "$want" ] || { echo "note $c is not the controller this run connected (now: $now; \
connected: $want): left alone"; continue; }
    nvme disconnect -d "$c" >/dev/null 2>&1 || echo 1 > "/sys/class/nvme/$c/delete_controller" 2>/dev/null
    [ "$(cid "$c")" != "$want" ] || left="$left $c"
done
IFS=$o; set +f
[ -z "$left" ] || { echo "error still connected to $N ($left )"; exit 6; }""", 'rm -f "$IDS"'])


@dataclass(frozen=True)
class NvmeInitiator(HostInitiator):
    def attach(self, spec: NvmeTcpAttach, mount: str, run_key: str) -> str:
        return attach(spec, mount)

    def detach(self, spec: NvmeTcpAttach, mount: str, ids: tuple[str, ...] | None, run_key: str) -> str:
        return detach(spec, mount, ids)

    def storage(self, spec: NvmeTcpAttach) -> tuple:
        return (self.protocol, spec.nqn, spec.nsid)

    def summary(self, kernel: str) -> list[str]:
        return [ln for ln in kernel.splitlines() if re.match(r"nvme\d+: ", ln)]

    def notes(self, spec: NvmeTcpAttach, kernel: str) -> tuple[str, ...]:
        """The I/O queues the kernel gave when fewer than the plan asked (it gives at most one per CPU)."""
        gave = [int(n) for n in re.findall(r"(\d+) I/O queues", kernel)]
        if spec.queues and gave and min(gave) < spec.queues:
            return (f"the kernel gave {min(gave)} of the {spec.queues} I/O queues asked (nvme-tcp makes at most one "
                    "per CPU of the host)",)
        return ()


INITIATOR = NvmeInitiator("nvme-tcp", "nvme", "nvme_tcp", "nvme-cli")
