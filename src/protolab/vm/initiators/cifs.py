"""A load guest's SMB3 mount by its kernel's CIFS client: the ``pl.smb`` word of its kernel command line.

The guest's init (scripts/build-guest.sh) splits the word on commas and mounts //ADDR/SHARE on /mnt/pl with busybox's
mount, which hands ``ip=ADDR,username=USER,password=PASS,vers=VERS,cache=none[,OPT…]`` to the kernel as they are (no
mount.cifs: the kernel takes the server's address from ip= and the share from the source //ADDR/SHARE). cache=none
is the kernel's direct I/O for every open on the mount, so fio's buffered jobs as well as its direct=1 ones reach the
server (with the default cache=strict, only O_DIRECT opens would). Every value is checked here first: nothing the
kernel's option parser would read as another option (a comma, a space, an '=' in a value) reaches the guest.

The password is the lab's (lab.servers.samba.password): it reaches the guest on its kernel command line, which
QEMU's own command line carries (readable by local users: it admits only the lab's own addresses, inside namespaces
only root enters); the guest's console repeats the command line without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Address

from ...conventions import DATA_FILE
from ...errors import ProtolabError
from ...lab.names import check_in_lab_range
from ...plan.attach import SMB_VERSIONS, check_cifs_option
from ...plan.model import Configuration
from .initiator_adapter import MOUNT, Attachment, Initiator

#: the line a load guest's console says the share is mounted with (on initiator_adapter.MOUNT)
LINE = "protolab-guest: smb "
FAILED = "protolab-guest: smb mount of "
#: SMB dialects the kernel's vers= takes that Samba's lab share serves (lab.servers.samba: SMB 3.0 to 3.1.1); "3": the
#: highest both sides have
VERSIONS = SMB_VERSIONS
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PASSWORD = re.compile(r"[A-Za-z0-9]{8,128}")


def _check_option(option: str) -> str:
    try:
        return check_cifs_option(option)  # the options an attach on a user's host takes (plan.attach)
    except ValueError as e:
        raise ProtolabError(str(e)) from None


@dataclass(frozen=True)
class CifsClient:
    """A load guest's mount of an SMB share on /mnt/pl: the server's address, the share, the user and password, the
    SMB dialect, and any further cifs options."""

    address: str
    share: str
    user: str
    password: str
    version: str = "3.1.1"
    options: tuple[str, ...] = ()

    def _checked(self) -> None:
        try:
            IPv4Address(self.address)
            check_in_lab_range(self.address)
        except ValueError as e:
            raise ProtolabError(f"CIFS server address {self.address!r}: {e}") from None
        for what, value in (("share", self.share), ("user", self.user)):
            if not _NAME.fullmatch(value):
                raise ProtolabError(f"CIFS {what} {value!r}: letters, digits and _ . - only (1-64 of them)")
        if not _PASSWORD.fullmatch(self.password):
            raise ProtolabError("CIFS password: 8-128 letters and digits (the lab makes one: lab.servers.samba)")
        if self.version not in VERSIONS:
            raise ProtolabError(f"CIFS version {self.version!r}: one of {', '.join(VERSIONS)}")
        for o in self.options:
            _check_option(o)

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh)."""
        self._checked()
        return [",".join(["pl.smb=" + self.address, self.share, self.user, self.password, self.version,
                          *self.options])]

    @property
    def unc(self) -> str:
        """The share as the guest mounts it: //ADDR/SHARE."""
        return f"//{self.address}/{self.share}"

    @property
    def mount_options(self) -> str:
        """The options the guest's console reports the mount with (no credentials)."""
        return ",".join([f"vers={self.version}", "cache=none", *self.options])

    @property
    def console_line(self) -> str:
        """The line the guest's console shows once the share is mounted."""
        return f"{LINE}{self.unc} on {MOUNT} {self.mount_options}"

    @property
    def data_file(self) -> str:
        """The export's data file as fio in the guest opens it."""
        return f"{MOUNT}/{DATA_FILE}"

    def describe(self) -> str:
        """The mount for people and the manifest (no password)."""
        return f"{self.unc} as {self.user} by the kernel's CIFS client, {self.mount_options}"


@dataclass(frozen=True)
class CifsInitiator(Initiator):
    """The load guest's kernel CIFS client (vm.initiators.initiator_adapter): it mounts the share as the lab's user; the
    server admits guests by address."""

    def words(self, a: Attachment) -> list[str]:
        if a.credentials is None or a.target is None:
            raise ProtolabError("CIFS: the server gave no share or credentials (lab.servers.samba)")
        user, secret = a.credentials
        return CifsClient(a.address, a.target, user, secret).kernel_args()

    def label(self, c: Configuration, queues: int) -> str:
        return f"mounted on {MOUNT} with vers=3.1.1,cache=none"


INITIATOR = CifsInitiator("smb", by_address=True, mounted=True, console_line=LINE)
