"""SMB3 through Samba's smbd: one share (an export volume's directory), SMB 3.0-3.1.1 only, a lab user, and only the
granted addresses let in.

Everything smbd keeps lives in ``<workdir>/smb`` (root's, 0700): its smb.conf, the username map, the password file,
and its private (tdbsam passdb, secrets), lock, state, cache, pid, ncalrpc and winbindd socket directories — never
/var/lib/samba or /run/samba, so two labs and the machine's own Samba share no database, socket or pid file (an
empty winbindd socket directory: smbd never asks the machine's winbindd). No nmbd, no NetBIOS (port 445 only), no
printing, no samba-dcerpcd started on demand: smbd serves files and nothing else.

The lab user: clients log in as ``protolab`` with a password made for each lab (``secrets``), kept in a root-only
file beside smb.conf and in the tdbsam passdb as root's (the username map makes ``protolab`` root, who owns the
data file). ``hosts allow`` lists the granted addresses and ``hosts deny = ALL`` refuses everyone else, loopback
included; smbd drops a refused client's connection before negotiation ("Denied connection from …").

Over a device model, smbd must not answer from the host's page cache: Samba has no direct-I/O parameter (smb.conf(5)
of 4.17 has none; upstream offers it only as out-of-tree VFS modules), so, as NFS-Ganesha, smbd runs with
protolab-direct.so preloaded (lab.device: whole 4 KiB blocks go to an O_DIRECT twin of the file; with a write-back
model libeatmydata acknowledges flushes), sendfile off (it would read the page cache past the shim), and no oplocks
or leases, so no client may cache the share's data above the model either. ``strict sync`` stays on: a client's
flush reaches the disk, as the other paths' do.

smbd serves each client in a child process; every child (and its notifyd and cleanupd) exits when the parent does,
even on SIGKILL (checked by hand with Samba 4.17), so teardown stops the one recorded parent, by pid and start time.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

from ...errors import ProtolabError, ToolError
from ...proc import Runner
from ...trust import check_file, open_nofollow
from ..device import ganesha_preload
from ..names import Names, check_in_lab_range
from ..procs import Processes, listening, wait_until
from ..record import Resource
from .server_adapter import Adapter, Serving

SMB_PORT = 445
SHARE = "protolab"
USER = "protolab"  # the name clients log in with; the username map makes it root, the data file's owner
UNIX_USER = "root"
DIR = "smb"  # in the lab's workdir
#: the dialects smbd accepts (smb.conf names): SMB 3.0 to 3.1.1 ("SMB3" alone would mean SMB3_11 in Samba)
MIN_PROTOCOL, MAX_PROTOCOL = "SMB3_00", "SMB3_11"
#: Samba's defaults, written out: the largest READ and WRITE a client may send (SMB >= 2.1 with LargeMTU) and the
#: credits it may hold (outstanding requests)
MAX_IO, MAX_CREDITS = 8 << 20, 8192
TIMEOUT = 30.0
#: what sits between smbd and the device model (the adapter's cache)
CACHE = ("none for whole 4 KiB blocks: smbd has no direct-I/O option, so protolab-direct.so (preloaded) sends its "
         "block-aligned reads and writes to an O_DIRECT twin of the file; other sizes go through the host's page "
         "cache; no sendfile, no oplocks or leases (no client caches the share's data)")
#: characters of a path smb.conf may hold: '%' would be expanded as a macro, a newline would start a parameter
_SAFE_PATH = re.compile(r"/[A-Za-z0-9_./+-]{1,1000}")


def _check_path(path: Path, what: str) -> str:
    text = str(path)
    if not _SAFE_PATH.fullmatch(text) or ".." in text.split("/"):
        raise ProtolabError(f"Samba: {what} {text!r} cannot go into smb.conf (only letters, digits and _ . / + - "
                            "in an absolute path); use a lab workdir with a plain path")
    return text


def _check_clients(clients: list[str]) -> list[str]:
    for c in clients:
        try:
            IPv4Address(c)
            check_in_lab_range(c)
        except ValueError as e:
            raise ProtolabError(f"Samba: client {c!r}: {e}") from None
    return clients


@dataclass(frozen=True)
class SmbShare:
    """How clients reach the lab's share, and what of it shapes the wire."""

    address: str
    share: str = SHARE
    user: str = USER
    port: int = SMB_PORT

    @property
    def unc(self) -> str:
        """The share's UNC as mount and smbclient take it: //ADDR/SHARE."""
        return f"//{self.address}/{self.share}"

    @property
    def url(self) -> str:
        """The share as a URL: smb://ADDR/SHARE (a port only when it is not 445)."""
        port = "" if self.port == SMB_PORT else f":{self.port}"
        return f"smb://{self.address}{port}/{self.share}"

    def facts(self) -> dict[str, str | int]:
        """What of the server shapes the wire: dialects, transport, sizes, credits, signing, encryption."""
        return {"server": "Samba smbd", "dialects": "SMB 3.0-3.1.1", "transport": f"direct TCP, port {self.port} "
                "(4 B session header, no NetBIOS)", "max_read": MAX_IO, "max_write": MAX_IO, "credits": MAX_CREDITS,
                "signing": "offered, not required", "encryption": "offered, not required (none unless asked)"}


def smb_conf(root: Path, share_path: Path, clients: list[str], modelled: bool = False) -> str:
    """The lab's smb.conf: every directory smbd keeps under ``root``, one share of ``share_path``, SMB3 only, the
    lab user alone, ``clients`` (lab addresses) alone; ``modelled``: the pool has a device model (no sendfile,
    oplocks or leases: see the module's docstring)."""
    r = _check_path(root, "directory")
    share = _check_path(share_path, "share")
    allow = " ".join(_check_clients(clients))  # none: with 'hosts deny = ALL', everyone is refused
    return f"""# written by protolab: one share, SMB3 only, the lab user, the granted addresses alone
[global]
server role = standalone server
workgroup = PROTOLAB
netbios name = PROTOLAB-LAB
disable netbios = yes
smb ports = {SMB_PORT}
server min protocol = {MIN_PROTOCOL}
server max protocol = {MAX_PROTOCOL}
smb2 max read = {MAX_IO}
smb2 max write = {MAX_IO}
smb2 max trans = {MAX_IO}
smb2 max credits = {MAX_CREDITS}
security = user
map to guest = never
passdb backend = tdbsam:{r}/private/passdb.tdb
username map = {r}/users.map
private dir = {r}/private
binddns dir = {r}/private/bind-dns
lock directory = {r}/lock
state directory = {r}/state
cache directory = {r}/cache
pid directory = {r}/pid
ncalrpc dir = {r}/ncalrpc
winbindd socket directory = {r}/winbindd
ntp signd socket directory = {r}/ntp_signd
usershare path = {r}/usershares
log file = {r}/log/smbd.log
rpc start on demand helpers = no
load printers = no
printing = bsd
printcap name = /dev/null
disable spoolss = yes
hosts allow = {allow}
hosts deny = ALL
use sendfile = no

[{SHARE}]
path = {share}
read only = no
browseable = no
valid users = {UNIX_USER}
strict sync = yes
oplocks = {"no" if modelled else "yes"}
level2 oplocks = {"no" if modelled else "yes"}
"""


def smbd_argv(conf: Path, preload: str | None = None) -> list[str]:
    """smbd in the foreground with its log on stdout (the lab's log file), reading only ``conf``; ``preload``: the
    libraries it runs with, colon-separated (LD_PRELOAD: direct I/O over a device model, lab.device)."""
    argv = ["smbd", "--foreground", "--no-process-group", f"--configfile={conf}", "--debug-stdout", "--debuglevel=1"]
    return ["env", f"LD_PRELOAD={preload}", *argv] if preload is not None else argv


def password(workdir: Path) -> str:
    """The lab user's password, from its root-only file in ``workdir`` (a load guest's mount needs it)."""
    path = check_file(workdir / DIR / "password", "the lab's SMB password file")
    if os.stat(path).st_mode & 0o077:
        raise ProtolabError(f"{path}: the SMB password file must be readable by root alone (mode 0600)")
    return path.read_text().strip()


@dataclass
class Samba:
    """The SMB server adapter (smbd)."""

    runner: Runner
    procs: Processes
    netns: str
    workdir: Path

    @property
    def root(self) -> Path:
        """Where smbd keeps everything of this lab."""
        return self.workdir / DIR

    @property
    def conf(self) -> Path:
        """This lab's smb.conf."""
        return self.root / "smb.conf"

    def start(self, share_path: Path, clients: list[str], preload: str | None = None,
              modelled: bool = False) -> list[Resource]:
        """Write smb.conf, make the lab user with a new password, start smbd in the storage namespace sharing
        ``share_path`` to ``clients`` alone; returns the recorded directory and process (teardown: process first)."""
        text = smb_conf(self.root, share_path, clients, modelled)  # refused before anything is made
        tree = self.procs.record.add("dir", str(self.root.absolute()))
        if os.path.lexists(self.root):  # a crashed lab's: nothing of it is kept
            self.root.unlink() if self.root.is_symlink() else shutil.rmtree(self.root)
        self.root.mkdir(mode=0o700)
        for sub in ("private", "lock", "state", "cache", "pid", "ncalrpc", "winbindd", "log"):
            (self.root / sub).mkdir(mode=0o700)
        self._write("smb.conf", text)
        self._write("users.map", f"{UNIX_USER} = {USER}\n")
        secret = secrets.token_hex(16)  # letters and digits only: it rides on a kernel command line as an option
        self._write("password", secret + "\n")
        self.runner.run(["pdbedit", "-s", str(self.conf), "-a", "-u", UNIX_USER, "-t"], input=f"{secret}\n{secret}\n",
                        timeout=TIMEOUT)
        return [tree, self.start_smbd(preload)]

    def start_smbd(self, preload: str | None = None) -> Resource:
        """Start smbd with the configuration, user and directories ``start`` made; returns once it listens."""
        pidfile = self.root / "pid" / "smbd.pid"
        pidfile.unlink(missing_ok=True)  # a killed smbd's
        res = self.procs.start("smbd", smbd_argv(self.conf, preload), self.netns)
        wait_until("smbd", lambda: pidfile.exists() and listening(self.runner, self.netns, SMB_PORT), TIMEOUT,
                   lambda: self.procs.running(res), lambda: self.procs.log_tail("smbd"))
        pid = int(pidfile.read_text().split()[0])
        if pid != res.extra.get("pid"):  # smbd is the process we spawned (exec'd through env and ip netns exec)
            raise ToolError(f"smbd: its pidfile names pid {pid}, not the one started ({res.extra.get('pid')})")
        return res

    def _write(self, name: str, text: str) -> None:
        fd = open_nofollow(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)

    def share(self, address: str) -> SmbShare:
        """The share as a client reaching ``address`` (a storage port's) sees it."""
        return SmbShare(address)

    def stop(self, res: Resource) -> None:
        """Stop smbd (it exits on SIGTERM, its children with it)."""
        self.procs.stop(res)


@dataclass(frozen=True)
class SambaAdapter(Adapter):
    """smbd as the lab's server of an SMB export (lab.servers.server_adapter): the export's volume is the share; its
    clients are the load guests' kernels (vm.initiators.cifs), which log in as the lab user."""

    def start(self, s: Serving) -> None:
        Samba(s.runner, s.procs, s.names.storage_ns, s.workdir).start(
            s.volume, s.granted, ganesha_preload(s.spec.device), modelled=s.modelled)

    def restart(self, s: Serving) -> None:
        Samba(s.runner, s.procs, s.names.storage_ns, s.workdir).start_smbd(ganesha_preload(s.spec.device))

    def target(self, names: Names) -> str | None:
        return SHARE

    def credentials(self, workdir: Path) -> tuple[str, str] | None:
        return USER, password(workdir)

    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        return SmbShare(names.storage_address(port)).url

ADAPTER = SambaAdapter("samba", cache=CACHE, workdir_files=(DIR,), guests=True, processes=("smbd",),
                       tools=(("smbd", "samba", "SMB server"), ("pdbedit", "samba", "the SMB lab user")))
