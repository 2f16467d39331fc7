"""Samba's smbd as the lab's SMB3 server (lab.servers.samba), against the real smbd in a real lab: a granted host writes a
file over SMB 3.1.1 and reads it back; a host that was not granted, a wrong password and a pre-SMB3 dialect are
refused; nothing of it lands in /var/lib/samba or /run/samba; teardown leaves no process and no file. Over the
project's direct-I/O shim (a device model's setting), the share's data stays out of the host's page cache, where
without it the same write stays in it.

The lab here serves lab:local only (the registries that make `lab:smb` a lab target come later): its volume's
directory, holding protolab.dat, is the share, as an SMB volume's will be; the adapter keeps its own record.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import family_prefix, lab_workdir, sh
from protolab.lab import Lab
from protolab.lab.device import find_direct_lib
from protolab.lab.procs import Processes, alive
from protolab.lab.record import Record
from protolab.lab.servers.samba import SMB_PORT, Samba, password
from protolab.lab.teardown import undo_record
from protolab.plan.topology import LabSpec
from protolab.proc import SubprocessRunner

pytestmark = pytest.mark.lab
PREFIX = family_prefix("b")
SIZE = 1 << 20
MACHINE_SAMBA = [Path("/var/lib/samba"), Path("/run/samba"), Path("/var/cache/samba"), Path("/var/log/samba")]


@pytest.fixture
def workdir(request):
    if shutil.which("smbd") is None or shutil.which("smbclient") is None:
        pytest.skip("needs Samba's smbd and smbclient (scripts/install-deps.sh: samba, smbclient)")
    yield from lab_workdir(PREFIX, f"samba-{request.node.name[:30]}")


@pytest.fixture
def lab(workdir):
    spec = LabSpec.model_validate(dict(prefix=PREFIX, hosts=2, pool_size="1G", export_size="64M"))
    lab = Lab(spec, {"local"}, workdir)
    lab.up()
    try:
        yield lab
    finally:
        lab.down()


class Served:
    """smbd started by the adapter with its own record (in the lab's workdir), torn down from that record."""

    def __init__(self, lab: Lab, clients: list[str], preload: str | None = None, modelled: bool = False,
                 share: Path | None = None, home: Path | None = None):
        self.runner = SubprocessRunner()
        self.home = home or lab.workdir / "samba-test"  # ``home``: a shorter path (smbd's sockets live under it)
        self.home.mkdir(mode=0o700, exist_ok=True)
        self.record = Record.create(self.home, {}, [])
        self.procs = Processes(self.runner, self.record, self.home / "logs")
        self.samba = Samba(self.runner, self.procs, lab.names.storage_ns, self.home)
        self.share_dir = share or lab.export_file("local").parent  # ``share``: another directory (a scratch one)
        self.resources = self.samba.start(self.share_dir, clients, preload, modelled)
        self.pid = self.resources[-1].extra["pid"]

    def down(self) -> list[str]:
        removed = undo_record(self.record, self.runner, self.procs)
        shutil.rmtree(self.home)
        return removed


def smbclient(lab: Lab, host: int, served: Served, commands: str, cwd: Path, *, secret: str | None = None,
              extra: tuple[str, ...] = ()) -> tuple[int, str]:
    """smbclient in host ``host``'s namespace against the share over the lab's link (credentials from a 0600 file)."""
    auth = cwd / "auth"
    auth.write_text(f"username=protolab\npassword={secret or password(served.home)}\n")
    auth.chmod(0o600)
    addr = lab.names.storage_address(0)
    p = sh(["smbclient", f"//{addr}/protolab", "-A", str(auth), "-m", "SMB3", *extra, "-c", commands],
           netns=lab.names.host_ns(host), timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def samba_files() -> dict[Path, set[str]]:
    return {d: set(os.listdir(d)) if d.is_dir() else set() for d in MACHINE_SAMBA}


def test_a_granted_host_writes_and_reads_back_over_smb3_and_no_one_else_gets_in(lab, tmp_path):
    before = samba_files()
    h0, h1 = lab.names.host_address(0, 0), lab.names.host_address(1, 0)
    served = Served(lab, [h0])
    try:
        data = os.urandom(SIZE)
        (tmp_path / "in.bin").write_bytes(data)
        # SMB 3.1.1 and nothing else on the client's side: it got in, so that is the dialect
        rc, out = smbclient(lab, 0, served, f"put {tmp_path}/in.bin x.bin; get x.bin {tmp_path}/out.bin", tmp_path,
                            extra=("--option=client min protocol = SMB3_11", "-m", "SMB3_11"))
        assert rc == 0, out
        assert (tmp_path / "out.bin").read_bytes() == data
        assert (served.share_dir / "x.bin").read_bytes() == data  # on the export volume, beside protolab.dat
        assert (served.share_dir / "protolab.dat").stat().st_size == 64 << 20

        rc, out = smbclient(lab, 1, served, "ls", tmp_path)  # host 1 was not granted: dropped before negotiation
        assert rc != 0 and "NT_STATUS_INVALID_NETWORK_RESPONSE" in out, out
        log = (served.home / "logs" / "smbd.log").read_text()
        assert f"Denied connection from {h1}" in log, log[-2000:]
        rc, out = smbclient(lab, 0, served, "ls", tmp_path, secret="0" * 32)
        assert rc != 0 and "NT_STATUS_LOGON_FAILURE" in out, out
        rc, out = smbclient(lab, 0, served, "ls", tmp_path, extra=("-m", "SMB3_00"))  # SMB 3.0: let in
        assert rc == 0 and "protolab.dat" in out, out
        rc, out = smbclient(lab, 0, served, "ls", tmp_path, extra=("-m", "SMB2_10"))  # SMB 2.1 at most: refused
        assert rc != 0 and "NT_STATUS_NOT_SUPPORTED" in out, out
        # smbd listens in the storage namespace only
        assert sh(["ss", "-Hltn", f"sport = :{SMB_PORT}"], netns=lab.names.storage_ns).stdout.strip()
        assert not sh(["ss", "-Hltn", f"sport = :{SMB_PORT}"], netns=lab.names.host_ns(0)).stdout.strip()
        assert oct((served.home / "smb" / "password").stat().st_mode & 0o777) == "0o600"
        assert oct((served.home / "smb").stat().st_mode & 0o777) == "0o700"
    finally:
        removed = served.down()
    assert removed == [f"process smbd (pid {served.pid})", f"directory {served.home / 'smb'}"], removed
    assert not alive(served.pid)
    ours = [ln for ln in sh(["pgrep", "-af", "smbd"]).stdout.decode().splitlines() if str(lab.workdir) in ln]
    assert ours == []
    assert samba_files() == before  # the machine's own Samba directories were not touched


def cached_pages(path: Path) -> int:
    out = sh(["fincore", "--bytes", "--noheadings", "--output", "PAGES", str(path)], check=True).stdout.decode()
    return int(out.split()[0])


def test_over_the_direct_io_shim_the_shares_data_stays_out_of_the_page_cache(lab, tmp_path):
    """A device model's setting (preload and no oplocks): smbd's whole-block writes and reads reach the file through
    its O_DIRECT twin, so none of it is in the host's page cache; without it, the same write is."""
    lib = find_direct_lib()
    if lib is None or shutil.which("fincore") is None:
        pytest.skip("needs protolab-direct.so (make deps) and fincore (util-linux)")
    data = os.urandom(SIZE)
    (tmp_path / "in.bin").write_bytes(data)
    h0 = lab.names.host_address(0, 0)
    for preload in (None, str(lib)):
        served = Served(lab, [h0], preload, modelled=preload is not None)
        try:
            name = "direct.bin" if preload else "buffered.bin"
            rc, out = smbclient(lab, 0, served, f"put {tmp_path}/in.bin {name}; get {name} {tmp_path}/out.bin",
                                tmp_path)
            assert rc == 0, out
            assert (tmp_path / "out.bin").read_bytes() == data
            pages = cached_pages(served.share_dir / name)
            env = Path(f"/proc/{served.pid}/environ").read_bytes().split(b"\0")
            conf = (served.home / "smb" / "smb.conf").read_text()
        finally:
            served.down()
        print(f"\n{name}: {pages} of {SIZE // 4096} pages in the host's page cache after a put and a get")
        if preload:
            assert pages == 0, pages
            assert f"LD_PRELOAD={lib}".encode() in env
            assert re.search(r"^oplocks = no$", conf, re.M) and re.search(r"^use sendfile = no$", conf, re.M)
        else:
            assert pages >= SIZE // 4096 // 2, pages  # the control: a buffered write stays in the page cache
