"""Virtual machines as load hosts: QEMU guests in the lab's host namespaces, the third testbed.

Each (configuration, host, VM) gets a guest whose data disks QEMU opens from the
host's namespace over the configuration's protocol (libiscsi to tgt, nbd to nbdkit,
libnfs to a disk-image file on the NFS export) behind the configuration's virtual
disk controller, so the storage traffic crosses the emulated links and the
telemetry counts it. A guest boots on first use and serves every cell of its
configuration; fio inside it is a fio server the host's fio client drives through
a forward on 127.0.0.1 of the host's namespace (control traffic never crosses the
measured links). Guests are recorded in the lab's record, so the lab's teardown —
after a failure or a signal too — stops every QEMU it started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.fio import Fio
from ..engine.jobfile import Stream
from ..engine.measure import HostRun
from ..engine.targets import Access
from ..errors import ProtolabError, ToolError
from ..plan.model import Configuration, Plan
from ..proc import Runner
from ..telemetry.window import Window
from .labbed import LabTestbed, lab_protocol
from .progress import Progress

BOOT_TIMEOUT_S = 300.0  # a TCG guest on a busy 2-core machine boots in ~10-30 s


@dataclass
class GuestAgent:
    """A guest's fio server as the fio client sees it (the Agent interface of engine.agents)."""

    name: str
    guest: Any  # vm.qemu.Guest
    client_netns: str | None
    devices: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.guest.start()
        self.devices = sorted(self.guest.wait_ready(timeout=BOOT_TIMEOUT_S))

    def stop(self) -> None:
        self.guest.stop()

    def client_arg(self) -> str:
        return self.guest.client_arg()

    def matches(self, hostname: str, port: int | None) -> bool:
        return hostname in ("127.0.0.1", "localhost") and port in (None, self.guest.spec.fio_port)

    def describe(self) -> str:
        return f"guest {self.name} (QEMU pid {self.guest.pid}, fio server on 127.0.0.1:{self.guest.spec.fio_port} " \
               f"in {self.client_netns})"

    def pid(self) -> int | None:
        return self.guest.pid

    def check(self) -> None:
        popen = self.guest.popen
        if popen is not None and popen.poll() is not None:
            raise ToolError(f"guest {self.name}: QEMU exited ({popen.returncode}): {self.guest.log_tail()}")


class VmTestbed(LabTestbed):
    """The embedded lab with QEMU guests as its load hosts."""

    def __init__(self, plan: Plan, fio: Fio, runner: Runner, progress: Progress, workdir: Path):
        super().__init__(plan, fio, runner, progress, workdir)
        self.kind = "vm"
        self.hv = plan.hypervisor
        self.accel: Any = None  # vm.accel.AccelChoice, decided at up()
        self.image: Any = None
        self.guests: dict[tuple[str, int, int], GuestAgent] = {}

    def up(self, run_path: Path) -> dict[str, Any]:
        from ..vm.accel import choose
        from ..vm.image import find_image

        self.image = find_image()
        if self.image is None:
            raise ProtolabError("hypervisor: no guest image; run 'make deps' (scripts/build-guest.sh builds it)")
        super().up(run_path)
        self.progress.note(f"choosing the accelerator ({self.hv.accel})")
        self.accel = choose(self.hv.accel, self.runner, self.image, remember=True)
        return self.describe()

    def describe(self) -> dict[str, Any]:
        out = super().describe() | {"kind": "vm"}
        hv = self.hv
        out["hypervisor"] = {"vms_per_host": hv.vms_per_host, "vcpus": hv.vcpus, "memory": hv.memory,
                             "disks_per_vm": hv.disks_per_vm, "accel_wanted": hv.accel,
                             "accel": self.accel.accel if self.accel else None,
                             "accel_reason": self.accel.reason if self.accel else None}
        return out

    def controller(self, c: Configuration) -> str:
        """The configuration's virtual disk controller."""
        return c.controller or self.hv.controller

    def target_label(self, c: Configuration) -> str:
        return f"{self.hv.disks_per_vm} {self.controller(c)} disk(s) per VM over {self.data_access(c).describe()}"

    def data_access(self, c: Configuration) -> Access:
        return super().access(c, 0, 0)  # protolab fills the export from host 0's namespace

    def _guest(self, c: Configuration, host: int, vm: int) -> GuestAgent:
        key = (c.name, host, vm)
        agent = self.guests.get(key)
        if agent is None:
            from ..vm.accel import free_port
            from ..vm.host import lab_guest

            protocol = lab_protocol(self.plan, c)
            name = f"{self.plan.lab.prefix}-{c.name}-h{host + 1}-vm{vm + 1}"
            disks = [(protocol, self.controller(c))] * self.hv.disks_per_vm
            guest = lab_guest(self.lab, self.image, name, disks, host=host, accel=self.accel.accel,
                              vcpus=self.hv.vcpus, memory_mib=self.hv.memory_mib, fio_port=free_port(),
                              runner=self.runner)
            agent = GuestAgent(name, guest, self.lab.names.host_ns(host))
            self.progress.note(f"booting guest {name} ({self.accel.accel}, {len(disks)} {self.controller(c)} "
                               f"disk(s) over {protocol})")
            self.guests[key] = agent
            self.agents[name] = agent  # stopped with the other agents; the lab's record has it too
            agent.start()
            if self.on_agents is not None:
                self.on_agents([a.describe() for a in self.agents.values()])
        return agent

    def access(self, c: Configuration, host: int, stream: int) -> Access:
        vms = self.hv.vms_per_host
        agent = self._guest(c, host, stream % vms)
        if not agent.devices:
            raise ToolError(f"guest {agent.name}: no data disk appeared in the guest")
        dev = agent.devices[(stream // vms) % len(agent.devices)]
        size = self.plan.lab.export_bytes
        return Access("block", c.ioengine or "libaio", {"direct": "1"}, f"/dev/{dev}", size, None, None, True)

    def host_runs(self, c: Configuration, h: int, total_hosts: int, streams: list[Stream]) -> list[HostRun]:
        vms = self.hv.vms_per_host
        out = []
        for vm in range(vms):
            mine = [s for s in streams if s.index % vms == vm]
            if mine:
                agent = self._guest(c, h, vm)
                out.append(HostRun(f"h{h + 1}-vm{vm + 1}", agent, None, mine))
        return out

    def window(self) -> Window:
        """The lab's window with the guests' QEMU threads as one more source (guests boot on first use: their
        processes are asked for at each sample)."""
        from ..vm.telemetry import QemuThreads

        window = super().window()
        window.add(QemuThreads(lambda: [a.guest.pid for a in self.guests.values() if a.guest.pid]))
        return window

    def down(self, keep_logs_in: Path | None = None) -> None:
        self.guests.clear()
        super().down(keep_logs_in)  # agents (the guests) first, then the lab with their record
