"""NBD through nbdkit: the file plugin; only granted hosts get through to its port.

Debian's nbdkit 1.32 ip filter rejects every address rule ("don't know how to parse
rule: allow=198.18.0.10"), so admission is enforced by policy routing in the storage
namespace (see ``netns.guard_commands``): packets to the NBD port from other hosts are dropped.

``protolab lab up`` leaves the lab running after the command exits, but nbdkit started
through ``ip netns exec`` arms PR_SET_PDEATHSIG itself and dies with its parent. So it
runs under a small shell that waits for it: the shell outlives protolab, and killing
the shell (or nbdkit, both are recorded) ends the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...conventions import DATA_FILE
from ...plan.protocols import PROTOCOLS
from ...proc import Runner
from ..names import Names
from ..netns import Net
from ..procs import Processes, listening, wait_until
from ..record import Resource
from .server_adapter import Adapter, Serving

NBD_PORT = PROTOCOLS["nbd"].port
TIMEOUT = 20.0


def nbdkit_argv(data_file: Path, pidfile: Path, port: int = NBD_PORT, uncached: bool = False) -> list[str]:
    """The nbdkit command line: the file plugin on ``port`` of every storage-namespace address,
    under a shell that waits for it (see the module's docstring). ``uncached``: the plugin's cache=none, which
    drops what it read or wrote from the page cache, so the pool's device model answers the next access."""
    server = ["nbdkit", "--foreground", "--pidfile", str(pidfile), "-p", str(port), "file", str(data_file),
              *(["cache=none"] if uncached else [])]
    return ["sh", "-c", 'nbdkit "$@" & wait $!', "sh", *server[1:]]


@dataclass
class Nbdkit:
    """The NBD server adapter."""

    runner: Runner
    procs: Processes
    netns: str

    def start(self, data_file: Path, allowed: list[str], storage_ports: list[str], uncached: bool = False,
              guard: bool = True) -> Resource:
        """Start nbdkit in the storage namespace, serving ``data_file`` to ``allowed`` addresses only (``guard``:
        make the routing rules that admit them; False on a restart, where they are still in force)."""
        if guard:
            Net(self.runner).guard(self.netns, storage_ports, NBD_PORT, allowed)
        pidfile = self.procs.logdir / "nbdkit.pid"
        pidfile.unlink(missing_ok=True)
        res = self.procs.start("nbdkit-parent", nbdkit_argv(data_file, pidfile, uncached=uncached), self.netns)
        wait_until("nbdkit", lambda: pidfile.exists() and listening(self.runner, self.netns, NBD_PORT),
                   TIMEOUT, lambda: self.procs.running(res), lambda: self.procs.log_tail("nbdkit-parent"))
        return self.procs.adopt("nbdkit", int(pidfile.read_text().split()[0]), self.netns)

    def stop(self, res: Resource) -> None:
        """Stop nbdkit (it exits on SIGTERM)."""
        self.procs.stop(res)


@dataclass(frozen=True)
class NbdkitAdapter(Adapter):
    """nbdkit as the lab's server of an NBD export (lab.servers.server_adapter)."""

    def start(self, s: Serving, guard: bool = True) -> None:
        ports = [s.names.storage_link(p).near.ifname for p in range(s.spec.storage_ports)]
        Nbdkit(s.runner, s.procs, s.names.storage_ns).start(s.volume / DATA_FILE, s.granted, ports,
                                                            uncached=s.modelled, guard=guard)

    def restart(self, s: Serving) -> None:
        self.start(s, guard=False)

    def url(self, names: Names, protocol: str, port: int, data: Path) -> str:
        return f"{protocol}://{names.storage_address(port)}:{NBD_PORT}"


ADAPTER = NbdkitAdapter("nbdkit", tools=(("nbdkit", "nbdkit", "NBD server"),), processes=("nbdkit", "nbdkit-parent"),
                        cache="page cache dropped after each access (nbdkit file plugin, cache=none)")
