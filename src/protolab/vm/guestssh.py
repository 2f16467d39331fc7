"""A guest reached over ssh, as a user's host is: dropbear in the guest, listening on its control NIC only
(10.0.2.15:22, never its data NIC on the lab's links), root's one authorized key from the kernel command line,
forwarded from 127.0.0.1:PORT of the namespace its QEMU runs in.

The key is checked here before it reaches the command line: a known key type and base64 only, written
``TYPE:BASE64`` (the command line splits on spaces); the guest's init turns the ':' back into a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ProtolabError

KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,1024}={0,2}")
GUEST_SSH_PORT = 22


def check_key(line: str) -> tuple[str, str]:
    """(type, base64) of an OpenSSH public key line 'TYPE BASE64 [comment]'; ProtolabError if it is not one."""
    parts = line.split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES or not _BASE64.fullmatch(parts[1]):
        raise ProtolabError(f"guest ssh key: not an OpenSSH public key of type {', '.join(KEY_TYPES)} "
                            "('TYPE BASE64 [comment]')")
    return parts[0], parts[1]


@dataclass(frozen=True)
class GuestSsh:
    """Port ``port`` on 127.0.0.1 of the guest's namespace forwards to its sshd; ``key`` may log in as root."""

    port: int
    key: str

    def kernel_args(self) -> list[str]:
        """The guest's kernel command line word (see scripts/build-guest.sh)."""
        kind, data = check_key(self.key)
        return [f"pl.ssh={kind}:{data}"]

    def hostfwd(self) -> str:
        """The user-mode network's forward (a -netdev user option)."""
        if not 1 <= self.port <= 65535:
            raise ProtolabError(f"guest ssh port {self.port} is not a TCP port (1-65535)")
        return f"hostfwd=tcp:127.0.0.1:{self.port}-:{GUEST_SSH_PORT}"
