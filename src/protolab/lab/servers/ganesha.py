"""NFS through NFS-Ganesha (VFS FSAL), NFSv3 and NFSv4.x, with its own rpcbind, without D-Bus.

rpcbind allows one instance per machine (a lock in /run) and ganesha registers
through /run/rpcbind.sock when that exists, so each is started in a private
mount namespace with an empty tmpfs on /run: rpcbind's lock and socket stay
private, and ganesha falls back to rpcbind on 127.0.0.1 of the storage namespace.
The tmpfs vanishes with the process; nothing is left on the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...conventions import DATA_FILE
from ...proc import Runner
from ...trust import open_nofollow
from ..device import ganesha_preload
from ..names import Names
from ..pool import Pool
from ..procs import Processes, listening, wait_until
from ..record import Resource
from .server_adapter import Adapter, Serving

NFS_PORT = 2049
MOUNT_PORT = 20048
TIMEOUT = 30.0


def private_run(argv: list[str]) -> list[str]:
    """``argv`` run in its own mount namespace with a private, empty /run."""
    inner = "mount -t tmpfs -o size=4m,mode=755 protolab-run /run && mkdir -p /run/rpcbind && exec \"$@\""
    return ["unshare", "--mount", "--propagation", "slave", "sh", "-c", inner, "sh", *argv]


def ganesha_config(export_path: Path, clients: list[str], recovery: Path) -> str:
    """The ganesha.conf of the lab: one export, admitted clients read-write, everyone else refused."""
    client_block = ""
    if clients:
        client_block = (
            "    CLIENT {\n"
            f"        Clients = {', '.join(clients)};\n"
            "        Access_Type = RW;\n"
            "    }\n"
        )
    return f"""# written by protolab: one export, access only for the plan's hosts
NFS_CORE_PARAM {{
    Protocols = 3, 4;
    NFS_Port = {NFS_PORT};
    MNT_Port = {MOUNT_PORT};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Mount_Path_Pseudo = true;
    Bind_addr = 0.0.0.0;
}}
NFSv4 {{
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "{recovery}";
    Minor_Versions = 0, 1, 2;
}}
NFS_KRB5 {{ Active_krb5 = false; }}
LOG {{ Default_Log_Level = EVENT; }}
EXPORT {{
    Export_Id = 1;
    Path = "{export_path}";
    Pseudo = "{export_path}";
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = None;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL {{ Name = VFS; }}
{client_block}}}
"""


@dataclass
class Ganesha:
    """The NFS server adapter (rpcbind + ganesha.nfsd)."""

    runner: Runner
    procs: Processes
    netns: str
    workdir: Path

    def start(self, export_path: Path, clients: list[str], preload: str | None = None) -> list[Resource]:
        """Start rpcbind and ganesha.nfsd in the storage namespace exporting ``export_path``; ``preload``: the
        libraries ganesha.nfsd runs with, colon-separated (LD_PRELOAD: direct I/O over a device model, lab.device)."""
        conf = self.workdir / "ganesha.conf"
        recovery = self.workdir / "ganesha-recovery"
        recovery.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never through a planted link
        with os.fdopen(fd, "w") as f:
            f.write(ganesha_config(export_path, clients, recovery))
        rpcbind = self.procs.start("rpcbind", private_run(["rpcbind", "-f"]), self.netns)
        wait_until("rpcbind", lambda: self._registered("portmapper"), TIMEOUT,
                   lambda: self.procs.running(rpcbind), lambda: self.procs.log_tail("rpcbind"))
        return [rpcbind, self.start_nfsd(preload)]

    def start_nfsd(self, preload: str | None = None) -> Resource:
        """Start ganesha.nfsd with the configuration ``start`` wrote (rpcbind already serving); returns once it is
        registered and listens (a killed one's registrations outlive it)."""
        argv = ["ganesha.nfsd", "-F", "-f", str(self.workdir / "ganesha.conf"),
                "-L", str(self.workdir / "ganesha.nfsd.log"), "-p", str(self.workdir / "ganesha.pid")]
        if preload is not None:
            argv = ["env", f"LD_PRELOAD={preload}", *argv]
        nfsd = self.procs.start("ganesha.nfsd", private_run(argv), self.netns)
        wait_until("ganesha.nfsd", lambda: self._registered("mountd") and self._registered("nfs")
                   and listening(self.runner, self.netns, NFS_PORT), TIMEOUT,
                   lambda: self.procs.running(nfsd), self._log)
        return nfsd

    def _registered(self, service: str) -> bool:
        out = self.runner.run(["rpcinfo", "-p", "127.0.0.1"], netns=self.netns, check=False, timeout=10)
        return any(line.split()[-1:] == [service] and "tcp" in line.split() for line in out.stdout.splitlines())

    def _log(self) -> str:
        try:
            lines = (self.workdir / "ganesha.nfsd.log").read_text(errors="replace").splitlines()
        except OSError:
            return self.procs.log_tail("ganesha.nfsd")
        bad = [ln for ln in lines if " CRIT " in ln or " FATAL " in ln or "MAJ" in ln]
        return " | ".join((bad or lines)[-2:])


#: With a write-back cache in the model (an array's NVRAM), a stable NFS write is acknowledged once the data is
#: written, as such an array does: NFS-Ganesha's fsync calls are no-ops (libeatmydata, which reaches its VFS module
#: because protolab-direct.so loads that module without RTLD_DEEPBIND); else each stable write would cost a btrfs
#: log commit — several device writes one after the other, the file's fsyncs serialised — where the array logged it
#: once.
WRITE_BACK = ("; its stable writes and commits are acknowledged without an fsync (libeatmydata), as the "
              "model's write-back cache acknowledges the block paths' writes")


@dataclass(frozen=True)
class GaneshaAdapter(Adapter):
    """NFS-Ganesha as the lab's server of an NFS export (lab.servers.server_adapter): the export's volume mounted on its
    own mount point, served from there."""

    def start(self, s: Serving) -> None:
        export = s.pool.mount_volume(s.protocol, s.mounts / s.names.nfs_mount)
        Ganesha(s.runner, s.procs, s.names.storage_ns, s.workdir).start(export, s.granted,
                                                                          ganesha_preload(s.spec.device))

    def restart(self, s: Serving) -> None:
        Ganesha(s.runner, s.procs, s.names.storage_ns, s.workdir).start_nfsd(ganesha_preload(s.spec.device))

    def data_file(self, names: Names, mounts: Path, pool: Pool, protocol: str) -> Path:
        return mounts / names.nfs_mount / DATA_FILE

    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        return f"{protocol}://{names.storage_address(port)}{data.parent}"

ADAPTER = GaneshaAdapter(
    "ganesha", workdir_files=("ganesha.conf", "ganesha-recovery", "ganesha.nfsd.log"), write_back=WRITE_BACK,
    processes=("ganesha.nfsd",),  # rpcbind, its helper, keeps running
    tools=(("ganesha.nfsd", "nfs-ganesha", "NFS server"), ("rpcbind", "rpcbind", "NFSv3 mount service")),
    cache="none for whole 4 KiB blocks: NFS-Ganesha's VFS FSAL has no direct-I/O option, so protolab-direct.so "
          "(preloaded) sends its block-aligned reads and writes to an O_DIRECT twin of the file; other sizes go "
          "through the host's page cache")
