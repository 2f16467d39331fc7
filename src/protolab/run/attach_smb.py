"""SMB3's attach on a user's host: the kernel's CIFS client mounts the share with mount.cifs (cifs-utils), logging
in with the user name and password of a credentials file on that host; see run.attaching and attach_sh.mounted_attach.

The plan names only the file (plan.attach.SmbAttach); what it holds never leaves the host: mount.cifs reads it, the
kernel keeps the password to itself, and the mount's line recorded in the run directory drops its username= and
domain=. Before mounting, the script refuses a credentials file that is a link, not a regular file, not root's, or
readable or writable by group or others (one 'error' line naming the file and the commands that fix it). The
mount is cache=none (fio's buffered jobs reach the server too, as in the lab's guests: vm.initiators.cifs),
nosuid,nodev,noexec, then nosymfollow, on a mount point of this run's; the check before each window and the detach
are every mounted target's (hostinit.MountedInitiator).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..plan.attach import SmbAttach
from .attach_sh import ATTACH_DIR, FAILED, mounted_attach
from .hostinit import MountedInitiator

#: what of a cifs mount's /proc/mounts line is not recorded (the kernel shows no password): who logged in
_WHO = "s/,username=[^, ]*//g; s/,domain=[^, ]*//g; "


def options(s: SmbAttach) -> str:
    """mount -o after credentials=FILE: the dialect, cache=none, the plan's options, nosuid, nodev, noexec."""
    return s.mount_options() + ",nosuid,nodev,noexec"


def _vars(s: SmbAttach, mount: str) -> str:
    q = shlex.quote
    return (f"M={q(mount)}; SRC={q(s.unc)}; C={q(s.credentials)}; O={q(options(s))}; F={q(s.file)}; "
            f"D={q(ATTACH_DIR)}")


#: the credentials file: a regular file of root's that no one else may read or write, or one line saying what to do
CREDENTIALS = f"""\
why=""
if [ -L "$C" ]; then why="is a symbolic link"
elif [ ! -f "$C" ]; then why="is not a regular file (or is not there)"
else set -- $(stat -c '%u %a' "$C")
    if [ "$1" != 0 ]; then why="is owned by uid $1, not root"
    elif [ $((0$2 & 63)) -ne 0 ]; then why="has mode 0$2: group or others may read or write it"; fi
fi
[ -z "$why" ] || {{ echo "error credentials file $C $why; make it root's alone (chown root:root $C; chmod 600 $C), \
holding username= and password= lines"; exit {FAILED}; }}
command -v mount.cifs >/dev/null || {{ echo "error mount.cifs is not installed (Debian: cifs-utils)"; \
exit {FAILED}; }}"""
#: mount.cifs's own error line (it ends with a pointer to its manual page)
MOUNT = """\
out=$(mount.cifs "$SRC" "$M" -o "credentials=$C,$O" 2>&1) || { echo "error mount.cifs: $(echo "$out" | \
awk '/[Ee]rror/ {print; f = 1; exit} {last = $0} END {if (!f) print last}')"; rmdir "$M"; exit 4; }"""


def attach(s: SmbAttach, mount: str) -> str:
    return mounted_attach(_vars(s, mount), MOUNT, before=CREDENTIALS, kernel=_WHO)


def _mount_options(kernel: str) -> dict[str, str]:
    line = next((ln for ln in kernel.splitlines() if " cifs " in ln), "")
    fields = line.split()
    return dict(o.partition("=")[::2] for o in fields[3].split(",")) if len(fields) > 3 else {}


@dataclass(frozen=True)
class SmbInitiator(MountedInitiator):
    def attach(self, spec: SmbAttach, mount: str, run_key: str) -> str:
        return attach(spec, mount)

    def storage(self, spec: SmbAttach) -> tuple:
        return (self.protocol, spec.server, spec.share)

    def notes(self, spec: SmbAttach, kernel: str) -> tuple[str, ...]:
        """A dialect or size the kernel settled on other than the plan's (the server may offer less)."""
        got = _mount_options(kernel)
        asked = dict(o.partition("=")[::2] for o in spec.mount_options().split(",") if "=" in o)
        return tuple(f"the kernel mounted with {k}={got[k]} where the plan asked {k}={v}" for k, v in asked.items()
                     if k in got and got[k] != v and not (k == "vers" and v == "3"))  # "3": the highest both have


INITIATOR = SmbInitiator("smb", "mount.cifs", "cifs", "cifs-utils", mounted=True)
