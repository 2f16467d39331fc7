"""The embedded lab as a testbed: namespaces, emulated links, tgt / NFS-Ganesha / nbdkit over one pool.

Configurations whose target is `lab:PROTOCOL` reach the lab's export of that
protocol from the host's namespace (its NIC chosen by the path policy); others
(local files beside a lab study) are reached as on the local testbed. Link changes
are applied only when a cell's merged link differs from the current one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..engine.fio import Fio
from ..engine.jobfile import Stream
from ..engine.measure import HostRun
from ..engine.targets import Access, resolve
from ..errors import ToolError
from ..plan.model import Configuration, Plan
from ..plan.protocols import PROTOCOLS
from ..plan.servers import uses_knfsd
from ..plan.target_grammar import parse_target
from ..proc import Runner
from ..telemetry.cgroups import RoleCgroups
from ..telemetry.devicetime import DeviceCounters
from ..telemetry.telemetry_window import Window
from .progress import Progress
from .testbed import Testbed, every_step


def lab_protocol(plan: Plan, c: Configuration) -> str | None:
    """'iscsi', 'nfs', 'nbd' or 'local' for a `lab:` target; None for a path or URL."""
    return parse_target(plan.target_of(c).url).lab


class LabTestbed(Testbed):
    """The embedded lab (plus any local targets the plan names beside it)."""

    kind = "lab"

    def __init__(self, plan: Plan, fio: Fio, runner: Runner, progress: Progress, workdir: Path):
        super().__init__(plan, fio, runner, progress)
        self.kind = "lab"
        self.workdir = workdir
        self.lab = None
        self._link = None
        self._swept: dict[str, int] = {}  # the swept values in effect (plan.sweep)

    def check(self) -> None:
        """The lab's work directory must be root's alone (refused before anything is created), then the targets."""
        from ..trust import check_workdir

        check_workdir(self.workdir)
        if self.plan.method.breakdown:  # its captures need tcpdump and tshark: refused before anything is made
            from ..telemetry.capture import missing_tools

            if (why := missing_tools()) is not None:
                raise ToolError(why)
        super().check()

    def up(self, run_path: Path) -> dict[str, Any]:
        protocols = {p for c in self.plan.configurations if (p := lab_protocol(self.plan, c))}
        self.progress.note(f"bringing the lab up ({', '.join(sorted(protocols))})")
        from ..lab import Lab  # imported only when a plan uses the lab

        self.lab = Lab(self.plan.lab, protocols, self.workdir, self.runner,
                       knfsd=uses_knfsd(self.plan.configurations))
        # the lab records the rest itself (lab.record)
        self.note_made(lab_workdir=str(self.workdir.absolute()), lab_prefix=self.plan.lab.prefix)
        self.lab.up()
        return super().up(run_path)

    def _make_cgroups(self, run_path: Path) -> RoleCgroups | None:
        return self.lab.cgroups if self.lab is not None else None  # the lab's own, removed with it

    def describe(self) -> dict[str, Any]:
        spec = self.plan.lab
        device = self.lab.device() if self.lab is not None else None
        sweep = self.plan.sweep
        if device is not None and sweep is not None and sweep.service_time is not None:
            device["swept"] = (f"service time per cell: {', '.join(sweep.service_time)} (plan.sweep; cells.csv's "
                               "device_model names each cell's); the figures above are the model the lab was built "
                               "and prepared at; the overhead is measured again the first time each value is served")
        return {"kind": "lab", "prefix": spec.prefix, "hosts": spec.hosts, "nics_per_host": spec.nics_per_host,
                "topology": self.lab.describe() if self.lab is not None else None, "device": device}

    def down(self, keep_logs_in: Path | None = None) -> None:
        cgroups, lab = self.cgroups, self.lab
        self.cgroups = self.lab = None  # the lab removes its own cgroups

        def lab_down() -> None:
            if lab is not None:
                self.progress.note("tearing the lab down")
                lab.down(keep_logs_in=keep_logs_in)

        every_step([lambda: cgroups is not None and cgroups.priority.leave(),  # this process back where it was
                    lambda: Testbed.down(self, keep_logs_in), lab_down])

    def access(self, c: Configuration, host: int, stream: int) -> Access:
        protocol = lab_protocol(self.plan, c)
        if protocol is None:
            return super().access(c, host, stream)
        nics = self.plan.lab.nics_per_host
        nic = stream % nics if c.path_policy == "round-robin" else 0
        ep = self.lab.endpoint(protocol, host=host, nic=nic)
        t = self.plan.target_of(c)
        return resolve(ep.url, size=min(ep.size_bytes, t.size or ep.size_bytes), ioengine=c.ioengine,
                       direct=c.direct, netns=ep.netns, owned=True)

    def set_sweep(self, values: dict[str, int]) -> None:
        """A swept service time goes to the pool's device model when it changes (the pool re-calibrates once per
        value); a swept link rate is kept for set_link, where it replaces the configuration's own rate."""
        us = values.get("service_time")
        if us is not None and us != self._swept.get("service_time"):
            self.progress.note(f"device model: service time {us} µs")
            self.lab.set_service_time(us)
        self._swept = dict(values)

    def set_link(self, c: Configuration) -> None:
        link = self.plan.lab.link.merged(c.link)
        rate = self._swept.get("link_rate")
        if rate is not None:
            link = link.merged({"rate": f"{rate}mbit"})
        if link != self._link:
            self.lab.set_link(link)
            self._link = link

    def snapshot(self) -> None:
        self.lab.snapshot()

    def restore(self) -> None:
        self.lab.restore()

    def window(self) -> Window:
        ns = self.lab.names.storage_ns
        storage = [(n, i) for n, i in self.lab.interfaces() if n == ns]
        device = self.lab.blockdev  # the device model's time per request, around every window (run.recording)
        return Window.of(self.runner, server_pids=self.lab.server_pids(), interfaces=self.lab.interfaces(),
                         cgroups=self.cgroups, offload_ports=storage, device=device.stats if device else None)

    def device_stats(self) -> Callable[[], DeviceCounters] | None:
        """The device model's counters (method.breakdown reads them over its capture's span); None without one."""
        device = self.lab.blockdev if self.lab is not None else None
        return device.stats if device else None

    def problems(self) -> list[str]:
        dead = [f"storage server {d} is not running" for d in (self.lab.dead_servers() if self.lab else [])]
        return dead + super().problems()

    def serves(self, c: Configuration) -> bool | None:
        """``lab:local`` reaches the pool in the storage namespace, past every server: none serves it."""
        ref = parse_target(self.plan.target_of(c).url)
        return None if not ref.is_lab else bool(PROTOCOLS[ref.lab or ""].server)

    def fault_controls(self, c: Configuration) -> tuple[object, str]:
        """The lab's fault controls (lab.faults, ``Lab.faults``) and ``c``'s protocol, whose server a restart kills."""
        controls = getattr(self.lab, "faults", None)
        if controls is None:
            raise ToolError("this lab has no fault controls (lab.faults); it cannot do the plan's faults")
        return controls, lab_protocol(self.plan, c) or ""

    def capture_points(self, c: Configuration) -> tuple[str, object, list[tuple[str, str, str]]] | None:
        """The first load host's first NIC and the storage port it reaches, for ``c``'s protocol's dissector (None:
        a path no server serves, or a protocol tshark does not match)."""
        protocol = lab_protocol(self.plan, c)
        p = PROTOCOLS.get(protocol or "")
        if p is None or p.srt is None or self.lab is None:
            return None
        names = self.lab.names
        host, port = names.host_link(0, 0).near, names.storage_link(self.plan.lab.port_of(0, 0)).near
        return p.name, p.srt, [("host", host.netns, host.ifname), ("server", port.netns, port.ifname)]

    def storage_ports(self) -> list[str]:
        ns = self.lab.names.storage_ns
        return [f"{n}/{i}" for n, i in self.lab.interfaces() if n == ns]

    def host(self, c: Configuration, h: int, total_hosts: int, streams: list[Stream]) -> HostRun:
        if self.plan.hosts:
            return super().host(c, h, total_hosts, streams)
        return self._namespace_host(f"h{h + 1}", streams[0].access.netns, total_hosts, streams)
