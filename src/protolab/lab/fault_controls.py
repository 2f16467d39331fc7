"""The lab's fault controls (``Lab.faults``): a storage port's links down and up, a server killed and started again,
the device model stalled or returning flipped bytes — each at once, each idempotent, each recorded.

Every fault is a resource of kind ``fault`` in the lab's record, added before it is made and dropped once undone:
``restore`` undoes what the record still holds, and teardown (lab.teardown, newest first) undoes a fault before
anything under it — a stalled device is answered again before the pool is unmounted, a link left down by a killed
protolab comes up for a lab that is resumed. Servers are killed and started through their adapters (lab.servers:
``processes``, ``restart``); nothing here names a protocol or a server.

A link down is ``ip link set … down`` on both ends of every veth of one storage port: the port's own link and each
load host NIC's link that reaches it (LabSpec.port_of). tc's qdiscs survive a veth going down and up (checked
2026-12-07: tbf still root after up); ``link_up`` still puts the lab's shaping back where a root qdisc is missing.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import ProtolabError, ToolError
from ..plan.protocols import PROTOCOLS
from ..plan.topology import LabSpec, LinkSpec
from ..proc import Runner
from .device import BlockDevice, get_control, set_control
from .names import Link, Names
from .netns import TIMEOUT, Net
from .procs import Processes, alive, kill, wait_gone
from .record import FAULTS, Record, Resource
from .servers import Serving, adapter

KIND = "fault"
LINK_DOWN, SERVER_DOWN, STALL, CORRUPT = FAULTS
MAX_STALL_S = 3600.0  # the daemon's own bound (MAX_STALL_NS)


def port_links(names: Names, spec: LabSpec, port: int) -> list[Link]:
    """The links of storage port ``port``: its own, then every load host NIC's that reaches it."""
    return [names.storage_link(port)] + [names.host_link(h, n) for h in range(spec.hosts)
                                         for n in range(spec.nics_per_host) if spec.port_of(h, n) == port]


def set_links(runner: Runner, links: list[Link], up: bool, check: bool = True) -> None:
    """Both ends of each link down (the host's or storage's side first) or up (the switch's side first)."""
    for link in links:
        for end in ((link.switch, link.near) if up else (link.near, link.switch)):
            runner.run(["ip", "-n", end.netns, "link", "set", "dev", end.ifname, "up" if up else "down"],
                       check=check, timeout=TIMEOUT)


def undo_fault(resource: Resource, runner: Runner, record: Record) -> str | None:
    """Teardown's undo of a recorded fault, from the record alone (the lab object may be gone with its protolab):
    links up, the stall ended, the corruption cleared; a server killed needs nothing (teardown stops servers)."""
    name, extra = resource.name, resource.extra
    if name == LINK_DOWN:
        spec = LabSpec.model_validate(record.spec)
        set_links(runner, port_links(Names(spec), spec, int(extra["port"])), up=True, check=False)
        return f"link of storage port {extra['port']} up again"
    if name in (STALL, CORRUPT):
        try:
            set_control(Path(extra["disk"]), name, "0" if name == STALL else "")
        except OSError:  # the daemon is gone: nothing stalls or corrupts any more
            return None
        return "device stall ended" if name == STALL else "device corruption cleared"
    return None


@dataclass
class LabFaults:
    """The fault controls of one lab that is up: its runner, record, processes, names, the link in force, the
    device model (None over the RAM pool) and how a protocol's server is served (lab.Lab's own ``Serving``)."""

    runner: Runner
    record: Record
    procs: Processes
    names: Names
    link: LinkSpec
    device: BlockDevice | None
    serving: Callable[[str], Serving]

    @property
    def spec(self) -> LabSpec:
        """The lab's spec (its names')."""
        return self.names.spec

    def _faults(self, name: str) -> list[Resource]:
        return [r for r in self.record.find(KIND) if r.name == name]

    def _ports(self, port: int | None, what: str) -> list[int]:
        n = self.spec.storage_ports
        if port is None:
            return list(range(n))
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < n:
            raise ProtolabError(f"lab faults: {what}: storage port {port!r} does not exist (lab.storage_ports = {n})")
        return [port]

    # links
    def link_down(self, port: int | None = None) -> None:
        """Take storage port ``port``'s links down on both sides (None: every port's)."""
        for p in self._ports(port, "link_down"):
            if not any(r.extra.get("port") == p for r in self._faults(LINK_DOWN)):
                self.record.add(KIND, LINK_DOWN, port=p)
            set_links(self.runner, port_links(self.names, self.spec, p), up=False)

    def link_up(self, port: int | None = None) -> None:
        """Bring storage port ``port``'s links up again (None: every port's), with the lab's shaping."""
        for p in self._ports(port, "link_up"):
            links = port_links(self.names, self.spec, p)
            set_links(self.runner, links, up=True)
            for link in links:
                if self._unshaped(link):
                    Net(self.runner).configure(link, self.link)
            for r in self._faults(LINK_DOWN):
                if r.extra.get("port") == p:
                    self.record.drop(r)

    def _unshaped(self, link: Link) -> bool:
        """Whether the lab's link shapes traffic and an end of ``link`` has lost its root qdisc."""
        if not (self.link.rate_bps or self.link.delay_us or self.link.loss_pct):
            return False
        for end in (link.near, link.switch):
            out = self.runner.run(["tc", "-n", end.netns, "qdisc", "show", "dev", end.ifname, "root"],
                                  check=False, timeout=TIMEOUT).stdout
            if not any(w in out.split() for w in ("tbf", "netem")):
                return True
        return False

    # servers
    def _server(self, protocol: str, what: str):
        if protocol not in self.record.protocols:
            raise ProtolabError(f"lab faults: {what}: the lab serves no {protocol} export (it serves "
                                f"{', '.join(self.record.protocols)})")
        a = adapter(PROTOCOLS[protocol].server)
        if a is None or not a.processes:
            where = "no server" if a is None else f"its server, {a.name}, runs in the storage server guest"
            raise ProtolabError(f"lab faults: {what}: the lab runs no server process for {protocol} ({where})")
        return a

    def server_kill(self, protocol: str) -> None:
        """SIGKILL the lab's server of ``protocol`` (every process its adapter names); it stays down until
        ``server_start`` or ``restore``."""
        a = self._server(protocol, "server_kill")
        if not any(r.extra.get("protocol") == protocol for r in self._faults(SERVER_DOWN)):
            self.record.add(KIND, SERVER_DOWN, protocol=protocol)
        procs = [r for r in self.record.find("process") if r.name in a.processes]
        for r in procs:
            pid = r.extra.get("pid")
            if isinstance(pid, int) and alive(pid, r.extra.get("started")):
                kill(pid, signal.SIGKILL)
        for r in procs:
            pid = r.extra.get("pid")
            handle = self.procs.handles.pop(pid, None)
            if handle is not None:
                handle.wait(timeout=5)  # reaped: our own child
            elif isinstance(pid, int):
                wait_gone(pid, 5.0)
            self.record.drop(r)

    def server_start(self, protocol: str) -> None:
        """Start the lab's server of ``protocol`` again exactly as at lab up; returns once it listens (nothing
        when it was not killed)."""
        a = self._server(protocol, "server_start")
        down = [r for r in self._faults(SERVER_DOWN) if r.extra.get("protocol") == protocol]
        if not down:
            return
        a.restart(self.serving(protocol))
        for r in down:
            self.record.drop(r)

    # the device model
    def _device(self, what: str) -> BlockDevice:
        if self.device is None:
            raise ProtolabError(f"lab faults: {what} needs the pool's device model, and this lab's pool is RAM "
                                "(lab.storage model = 'ram'); give [lab.storage] a model")
        return self.device

    def _record_device_fault(self, name: str, **extra) -> None:
        found = self._faults(name)
        if found:
            self.record.update(found[0], **extra)
        else:
            self.record.add(KIND, name, disk=str(self._device(name).served.absolute()), **extra)

    def stall(self, seconds: float) -> None:
        """Hold every request of the device model, pending or arriving, until ``seconds`` from now, then answer
        them all (a later stall extends an earlier one)."""
        dev = self._device("stall")
        if not 0 < seconds <= MAX_STALL_S:
            raise ProtolabError(f"lab faults: stall of {seconds!r} s: give 0 < seconds <= {MAX_STALL_S:g}")
        self._record_device_fault(STALL, seconds=seconds)
        dev.stall(seconds)

    def corrupt(self, offset: int, length: int) -> None:
        """Reads of the device model overlapping [offset, offset + length) return those bytes flipped until
        ``clear_corrupt`` (the pool's image keeps them)."""
        dev = self._device("corrupt")
        size = self.spec.pool_bytes
        if not (isinstance(offset, int) and isinstance(length, int) and 0 <= offset < size
                and 0 < length <= size - offset):
            raise ProtolabError(f"lab faults: corrupt {offset!r} {length!r}: give 0 <= offset and 0 < length within "
                                f"the pool's {size} bytes")
        self._record_device_fault(CORRUPT, offset=offset, length=length)
        dev.corrupt(offset, length)

    def clear_corrupt(self) -> None:
        """Reads return the stored bytes again."""
        dev = self._device("clear_corrupt")
        dev.corrupt(0, 0)
        for r in self._faults(CORRUPT):
            self.record.drop(r)

    def in_force(self) -> list[str]:
        """The faults the record holds, for people ('lab status'): 'storage port 0 down', 'nbd server killed',
        'device stalled for 3 s', 'device corrupting 4096 bytes at 8192'."""
        said = {LINK_DOWN: "storage port {port} down", SERVER_DOWN: "{protocol} server killed",
                STALL: "device stalled for {seconds:g} s", CORRUPT: "device corrupting {length} bytes at {offset}"}
        return [said[r.name].format(**r.extra) for r in self.record.find(KIND)]

    def restore(self) -> list[str]:
        """Undo every fault still in force — links up, servers running, stall ended, corruption cleared — and
        say what had to be undone; each is tried, and what could not be undone is raised after the rest."""
        done: list[str] = []
        failed: list[str] = []
        for r in list(self.record.find(KIND)):
            try:
                said = self._undo(r)
            except Exception as e:  # the others still: a link left down must not keep a server down
                failed.append(f"{r.name} {r.extra}: {e}")
                continue
            if said:
                done.append(said)
        if failed:
            raise ToolError("lab faults: restore could not undo " + "; ".join(failed)
                            + " (the lab's record keeps them: 'protolab lab down' removes the lab)")
        return done

    def _undo(self, r: Resource) -> str | None:
        if r.name == LINK_DOWN:
            self.link_up(int(r.extra["port"]))
            return f"link of storage port {r.extra['port']} up again"
        if r.name == SERVER_DOWN:
            self.server_start(str(r.extra["protocol"]))
            return f"{r.extra['protocol']} server started again"
        if r.name == STALL:
            left = self._stall_left(r)
            if left > 0:
                set_control(Path(r.extra["disk"]), STALL, "0")
            self.record.drop(r)
            return f"device stall ended {left:.1f} s early" if left > 0 else None
        self.clear_corrupt()
        return f"device corruption of {r.extra['length']} bytes at {r.extra['offset']} cleared"

    @staticmethod
    def _stall_left(r: Resource) -> float:
        try:
            return int(get_control(Path(r.extra["disk"]), STALL)) / 1e9
        except (OSError, ValueError):
            return 0.0
