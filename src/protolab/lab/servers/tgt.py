"""iSCSI through tgt: one tgtd per lab with its own control port, a target, a LUN, an initiator list.

tgtd ignores SIGTERM; it is stopped with ``tgtadm --op delete --mode system`` and
SIGKILL as a last resort. Its control socket lives in /var/run/tgtd, shared by
every tgtd on the machine, hence a control port of our own, recorded for cleanup.
"""

from __future__ import annotations

import re
import signal
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from ...conventions import DATA_FILE
from ...errors import ToolError
from ...plan.protocols import PROTOCOLS
from ...proc import Runner
from ..names import Names
from ..procs import Processes, kill, listening, wait_until
from ..record import Resource
from .server_adapter import Adapter, Serving

ISCSI_PORT = PROTOCOLS["iscsi"].port
SOCKET_DIR = Path("/var/run/tgtd")
TID = 1
LUN = 1  # LUN 0 is tgt's controller
TIMEOUT = 20.0


def socket_paths(port: int) -> list[Path]:
    """The control socket and its lock file of the tgtd with control port ``port``."""
    return [SOCKET_DIR / f"socket.{port}", SOCKET_DIR / f"socket.{port}.lock"]


def choose_control_port(prefix: str, taken=lambda port: any(p.exists() for p in socket_paths(port))) -> int:
    """A control port derived from the prefix (stable across runs), skipping ones in use."""
    start = 1100 + zlib.crc32(prefix.encode()) % 800
    for port in range(start, start + 100):
        if not taken(port):
            return port
    raise ToolError(f"no free tgtd control port between {start} and {start + 99} (see {SOCKET_DIR})")


def tgtadm(port: int, *args: str) -> list[str]:
    """A tgtadm command against the tgtd with control port ``port``."""
    return ["tgtadm", "-C", str(port), "--lld", "iscsi", *args]


def setup_commands(port: int, iqn: str, lun_file: Path, initiators: list[str],
                   direct: bool = False) -> list[list[str]]:
    """The tgtadm commands for the lab's target: the target, its LUN (``direct``: opened O_DIRECT, past the page
    cache, so that the pool's device model answers every read), then one bind per admitted address."""
    cmds = [
        tgtadm(port, "--op", "new", "--mode", "target", "--tid", str(TID), "-T", iqn),
        tgtadm(port, "--op", "new", "--mode", "logicalunit", "--tid", str(TID), "--lun", str(LUN),
               "-b", str(lun_file), *(["--bsoflags", "direct"] if direct else [])),
    ]
    cmds += [tgtadm(port, "--op", "bind", "--mode", "target", "--tid", str(TID), "-I", a) for a in initiators]
    return cmds


@dataclass
class Tgt:
    """The iSCSI server adapter."""

    runner: Runner
    procs: Processes
    netns: str
    prefix: str

    def start(self, iqn: str, lun_file: Path, initiators: list[str], direct: bool = False) -> Resource:
        """Start tgtd in the storage namespace and export ``lun_file`` to ``initiators`` only."""
        port = choose_control_port(self.prefix)
        self.procs.record.add("tgtd-socket", str(port), port=port)
        res = self.procs.start("tgtd", ["tgtd", "-f", "-C", str(port)], self.netns, control_port=port)

        def ready() -> bool:
            if not socket_paths(port)[0].exists():
                return False
            ok = self.runner.run(tgtadm(port, "--op", "show", "--mode", "target"), check=False, timeout=TIMEOUT)
            return ok.returncode == 0 and listening(self.runner, self.netns, ISCSI_PORT)

        wait_until("tgtd", ready, TIMEOUT, lambda: self.procs.running(res), lambda: self.procs.log_tail("tgtd"))
        for cmd in setup_commands(port, iqn, lun_file, initiators, direct):
            self.runner.run(cmd, timeout=TIMEOUT)
        return res

    def stop(self, res: Resource) -> None:
        """Shut tgtd down through its control port; SIGKILL if it is still there after 5 s."""
        stop(self.runner, self.procs, res)


def stop(runner: Runner, procs: Processes, res: Resource) -> None:
    """Stop a recorded tgtd (also used by teardown from the record)."""
    pid, port = res.extra.get("pid"), res.extra.get("control_port")
    if pid is not None and procs.running(res):
        if port is not None:
            # tgtd refuses to delete the system while targets exist ("invalid request"): delete them first
            shown = runner.run(tgtadm(port, "--op", "show", "--mode", "target"), check=False, timeout=TIMEOUT)
            for tid in re.findall(r"^Target (\d+):", shown.stdout or "", re.M):
                runner.run(tgtadm(port, "--op", "delete", "--mode", "target", "--tid", tid, "--force"),
                           check=False, timeout=TIMEOUT)
            runner.run(["tgtadm", "-C", str(port), "--op", "delete", "--mode", "system"], check=False,
                       timeout=TIMEOUT)
        deadline = time.monotonic() + 2.0
        while procs.running(res) and time.monotonic() < deadline:  # running() reaps our own child
            time.sleep(0.02)
        if procs.running(res):
            kill(pid, signal.SIGKILL)
    procs.stop(res)


@dataclass(frozen=True)
class TgtAdapter(Adapter):
    """tgt as the lab's server of an iSCSI export (lab.servers.server_adapter)."""

    def start(self, s: Serving) -> None:
        Tgt(s.runner, s.procs, s.names.storage_ns, s.spec.prefix).start(
            s.names.iqn, s.volume / DATA_FILE, s.granted, direct=s.modelled)

    def restart(self, s: Serving) -> None:
        """A killed tgtd leaves its control socket: removed (and its record dropped) so that the new tgtd takes the
        same control port, not one more of the hundred each restart."""
        live = {r.extra.get("control_port") for r in s.procs.record.find("process", "tgtd") if s.procs.running(r)}
        for r in s.procs.record.find("tgtd-socket"):
            if r.extra.get("port") not in live:
                for path in socket_paths(int(r.extra["port"])):
                    path.unlink(missing_ok=True)
                s.procs.record.drop(r)
        self.start(s)

    def target(self, names: Names) -> str | None:
        return names.iqn

    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        return f"{protocol}://{names.storage_address(port)}:{ISCSI_PORT}/{names.iqn}/{LUN}"


ADAPTER = TgtAdapter("tgt", tools=(("tgtd", "tgt", "iSCSI target"),), processes=("tgtd",),
                     cache="none: tgt opens the LUN with O_DIRECT (bsoflags=direct)")
