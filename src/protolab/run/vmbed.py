"""Virtual machines as load hosts: QEMU guests in the lab's host namespaces, the third testbed.

Each (configuration, host, VM) gets a guest whose data disks QEMU opens from the
host's namespace over the configuration's protocol (libiscsi to tgt, nbd to nbdkit,
libnfs to a disk-image file on the NFS export; lab:local: the pool's file, no wire) behind
the configuration's virtual disk controller, so the storage traffic crosses the emulated links and the
telemetry counts it. A guest boots on first use and serves every cell of its
configuration; fio inside it is a fio server the host's fio client drives through
a forward on 127.0.0.1 of the host's namespace (control traffic never crosses the
measured links). Guests are recorded in the lab's record, so the lab's teardown —
after a failure or a signal too — stops every QEMU it started.

A kernel data path (``lab:nvme-tcp``, ``lab:iscsi`` with ``server = "lio"``, ``lab:nfs`` with
``server = "knfsd"``; plan.servers) has no virtual disk: a storage server guest (booted once, in
the storage namespace, in the servers' cgroup) exports the pool's volumes with nvmet-tcp, LIO or
knfsd, and each load guest's kernel attaches one over the lab's links (vm.kernelpaths); fio in the
guest runs on the NVMe namespace, the iSCSI sessions' disks or the file in its NFS mount.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..conventions import DATA_FILE
from ..engine.fio import Fio
from ..engine.jobfile import Stream
from ..engine.measure import HostRun
from ..engine.targets import Access, resolve
from ..errors import ProtolabError, ToolError
from ..lab.servers import Adapter, adapter
from ..plan.model import Configuration, Plan
from ..plan.protocols import PROTOCOLS, guest_kernel_only
from ..plan.servers import Server, kernel_served, server_for
from ..proc import Runner
from ..telemetry.telemetry_window import Window
from ..vm.initiators import MOUNT, initiator
from .labbed import LabTestbed, lab_protocol
from .progress import Progress

#: the storage server guest's QEMU among the storage servers (telemetry, bottleneck sentences)
SERVER_GUEST = "server guest"
BOOT_TIMEOUT_S = 300.0  # a TCG guest on a busy 2-core machine boots in ~10-30 s
SERVER_VERB_TIMEOUT_S = 60.0  # the server guest unexports and unmounts its knfsd volume (seconds under TCG)


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
        self.server: Any = None  # vm.qemu.Guest: the storage server guest of the kernel data paths, once booted
        self._window: Window | None = None  # the session's telemetry window: it watches the server guest once up

    def up(self, run_path: Path) -> dict[str, Any]:
        from ..vm.accel import choose
        from ..vm.image import ensure_image

        self.image = ensure_image(self.runner, self.progress.note)  # built here on a machine that ran `make demo`
        self._check_server_guest()  # before the lab: an access list Linux would cut short is refused at once
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
        kernel = {c.name: f"{lab_protocol(self.plan, c)} by {self._server(c).title}"
                  for c in self.plan.configurations if self.kernel(c)}
        if kernel:  # configurations whose guests' kernels attach the export (vm.kernelpaths)
            out["hypervisor"]["kernel_paths"] = kernel
        return out

    def controller(self, c: Configuration) -> str:
        """The configuration's virtual disk controller."""
        return c.controller or self.hv.controller

    def _server(self, c: Configuration) -> Server | None:
        """The lab's server of the configuration's export (None for lab:local)."""
        return server_for(lab_protocol(self.plan, c), c.server)

    def _adapter(self, c: Configuration) -> Adapter | None:
        s = self._server(c)
        return adapter(s.name if s else None)

    def in_server_guest(self, c: Configuration) -> bool:
        """True when a kernel serves the configuration's export: the storage server guest (vm.kernelpaths)."""
        return kernel_served(lab_protocol(self.plan, c), c.server)

    def kernel(self, c: Configuration) -> bool:
        """True when the guests' kernels attach the configuration's export (vm.initiators): a kernel serves it, or
        QEMU cannot attach its protocol as a disk and a guest's kernel can."""
        return self.in_server_guest(c) or guest_kernel_only(lab_protocol(self.plan, c))

    def target_label(self, c: Configuration) -> str:
        if self.kernel(c):
            protocol = lab_protocol(self.plan, c)
            how = initiator(protocol).label(c, self.hv.vcpus)
            where = "the storage server guest's" if self.in_server_guest(c) else "the storage namespace's"
            return f"{PROTOCOLS[protocol].title} by the guest's kernel ({how}) from {where} {self._server(c).title}"
        return f"{self.hv.disks_per_vm} {self.controller(c)} disk(s) per VM over {self.data_access(c).describe()}"

    def data_access(self, c: Configuration) -> Access:
        if self.kernel(c):  # the server guest's disk, filled from the storage side (as lab:local)
            size = min(self.plan.lab.export_bytes, self.plan.target_of(c).size or self.plan.lab.export_bytes)
            protocol = lab_protocol(self.plan, c)
            if self._adapter(c).own_volume:  # the data file in the knfsd volume's ext4, while this host holds it
                volume = self.lab.knfsd_volume
                if not volume.held:
                    raise ProtolabError(f"configuration {c.name!r}: the knfsd volume is the storage server guest's "
                                        "now; protolab writes its data only before the snapshot (prepare, "
                                        "initialise), not in fill stages")
                path = volume.data
            else:
                path = self.lab.export_file(protocol)
            return resolve(str(path), size=size, ioengine=None, direct=True, netns=self.lab.names.storage_ns,
                           owned=True)
        return super().access(c, 0, 0)  # protolab fills the export from host 0's namespace

    def _granted(self, names: Any) -> dict[str, list[str]]:
        """Per kernel server of the storage server guest, every load guest the plan can make for it (configuration,
        host, VM), as its initiator presents itself (host NQN, initiator IQN; by address: every address an admitted
        host's guests can have, as guests are numbered as they boot)."""
        spec, vms = self.plan.lab, self.hv.vms_per_host
        slots = len(self.plan.configurations) * vms
        out: dict[str, list[str]] = {}
        for ci, c in enumerate(self.plan.configurations):
            if not self.in_server_guest(c):
                continue
            protocol = lab_protocol(self.plan, c)
            init, hosts = initiator(protocol), [h for h in range(spec.hosts) if spec.access(protocol).admits(h)]
            who = [names.load_guest_address(h, slot) for h in hosts for slot in range(slots)] if init.by_address \
                else [init.identity(names, h, vm, ci, 0) for h in hosts for vm in range(vms)]
            known = out.setdefault(self._server(c).name, [])
            known += [w for w in who if w not in known]
        return out

    def _server_mtu(self) -> int:
        spec = self.plan.lab
        return max(spec.link.merged(c.link).mtu for c in self.plan.configurations)

    def _check_server_guest(self) -> None:
        """Refuse, before anything is made, a server guest whose kernel command line Linux would cut short."""
        if not any(self.in_server_guest(c) for c in self.plan.configurations):
            return
        from ..lab.names import Names
        from ..vm.guestcpu import KERNEL_ARG
        from ..vm.kernelpaths import server_guest_name, server_nic, server_words
        from ..vm.qemu import kernel_cmdline

        names = Names(self.plan.lab)
        nic = server_nic(names, self._server_mtu())
        granted = self._granted(names)
        words, _ = server_words(names, nic.address, granted)
        kernel_cmdline(server_guest_name(names), [*words, *nic.kernel_args(), KERNEL_ARG])

    def _server_guest(self) -> None:
        """Boot the storage server guest once (kernel data paths), admitting every load guest the plan can make.
        It becomes the testbed's server only once ready (one that failed to boot is stopped at once)."""
        if self.server is not None:
            return
        from ..vm.accel import free_port
        from ..vm.kernelpaths import server_guest

        granted = self._granted(self.lab.names)
        served = sorted(s for s, names in granted.items() if names)
        guest = server_guest(self.lab, self.image, granted, mtu=self._server_mtu(), accel=self.accel.accel,
                             vcpus=self.hv.vcpus, memory_mib=self.hv.memory_mib, fio_port=free_port(),
                             runner=self.runner)
        self.progress.note(f"booting the storage server guest ({self.accel.accel}: {', '.join(served)})")
        try:
            guest.start()
            guest.wait_ready(timeout=BOOT_TIMEOUT_S)
        except BaseException:
            guest.stop()  # its tap and name free again: a later cell may boot it afresh
            raise
        self.server = guest
        if self._window is not None and guest.pid is not None:  # its QEMU as a server: CPU and busiest thread
            self._window.watch_server(SERVER_GUEST, guest.pid)

    def _make_guest(self, c: Configuration, name: str, host: int, vm: int):
        """A guest for (configuration, host, VM): QEMU's initiators attach its disks, or its kernel attaches."""
        from ..vm.accel import free_port

        if self.kernel(c):
            from ..vm.kernelpaths import load_guest

            if self.in_server_guest(c):
                self._server_guest()
            protocol = lab_protocol(self.plan, c)
            config = [x.name for x in self.plan.configurations].index(c.name)
            return load_guest(self.lab, self.image, name, host, c, protocol, self._server(c).name, vm=vm,
                              config=config, slot=len(self.guests), queues=self.hv.vcpus, accel=self.accel.accel,
                              vcpus=self.hv.vcpus, memory_mib=self.hv.memory_mib, fio_port=free_port(),
                              runner=self.runner), \
                f"its kernel's {protocol}"
        from ..vm.host import lab_guest

        disks = [(lab_protocol(self.plan, c), self.controller(c))] * self.hv.disks_per_vm
        return lab_guest(self.lab, self.image, name, disks, host=host, accel=self.accel.accel, vcpus=self.hv.vcpus,
                         memory_mib=self.hv.memory_mib, fio_port=free_port(), runner=self.runner), \
            f"{len(disks)} {self.controller(c)} disk(s) over {lab_protocol(self.plan, c)}"

    def _guest(self, c: Configuration, host: int, vm: int) -> GuestAgent:
        key = (c.name, host, vm)
        agent = self.guests.get(key)
        if agent is None:
            name = f"{self.plan.lab.prefix}-{c.name}-h{host + 1}-vm{vm + 1}"
            guest, what = self._make_guest(c, name, host, vm)
            agent = GuestAgent(name, guest, self.lab.names.host_ns(host))
            self.progress.note(f"booting guest {name} ({self.accel.accel}, {what})")
            self.guests[key] = agent
            self.agents[name] = agent  # stopped with the other agents; the lab's record has it too
            agent.start()
            if self.on_agents is not None:
                self.on_agents([a.describe() for a in self.agents.values()])
        return agent

    def access(self, c: Configuration, host: int, stream: int) -> Access:
        vms = self.hv.vms_per_host
        agent = self._guest(c, host, stream % vms)
        init = initiator(lab_protocol(self.plan, c)) if self.kernel(c) else None
        if init is not None and init.mounted:  # the data file in the guest's mount of a file export
            if init.console_line not in agent.guest.console_text():
                raise ToolError(f"guest {agent.name}: the {self._server(c).title} export was not mounted")
            return Access("file", c.ioengine or "libaio", {"direct": "1"}, f"{MOUNT}/{DATA_FILE}",
                          self.plan.lab.export_bytes, None, None, True)
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

    def snapshot(self) -> None:
        """The knfsd volume goes back to being a file (this host unmounts it), then the pool is snapshotted."""
        if self.lab.knfsd:
            self.lab.knfsd_volume.release()
        super().snapshot()

    def restore(self) -> None:
        """The pool back to the snapshot; a running server guest's knfsd lets go of its volume meanwhile (its ext4
        unexported and unmounted, so no page of the old bytes is left in the guest), and takes it back after."""
        serving = self.server is not None and self.lab.knfsd
        if serving:
            self._tell_server("quiesce")
        super().restore()
        if serving:
            self._tell_server("resume")

    def _tell_server(self, verb: str) -> None:
        answer = self.server.spec.stat.tell(verb, timeout=SERVER_VERB_TIMEOUT_S)
        if not answer.startswith("ok "):
            raise ToolError(f"the storage server guest's knfsd did not {verb} its volume for the restore: "
                            f"{answer or f'no answer within {SERVER_VERB_TIMEOUT_S:g} s'}")

    def window(self) -> Window:
        """The lab's window with the guests' QEMU threads as one more source (guests boot on first use: their
        processes are asked for at each sample)."""
        from ..vm.guestcpu import GuestCpu
        from ..vm.telemetry import QemuThreads

        window = super().window()
        window.add(QemuThreads(lambda: [a.guest.pid for a in self.guests.values() if a.guest.pid]))
        # the storage server guest's own CPU (its /proc/stat), once it is up: kernel data paths only
        window.add(GuestCpu(self._stat_channel))
        if self.server is not None and self.server.pid is not None:
            window.watch_server(SERVER_GUEST, self.server.pid)
        self._window = window
        return window

    def _stat_channel(self) -> Any:
        """The server guest's stat port while its QEMU runs (a dead guest's FIFOs are still there: never asked)."""
        popen = self.server.popen if self.server is not None else None
        return self.server.spec.stat if popen is not None and popen.poll() is None else None

    def foreign_fields(self, c: Configuration) -> tuple[str, ...]:
        """The server guest's own CPU belongs to the kernel data paths' cells only (it idles through the others)."""
        return () if self.in_server_guest(c) else ("server_guest_cpu_s",)

    def problems(self) -> list[str]:
        popen = self.server.popen if self.server is not None else None
        dead = [f"the storage server guest exited ({popen.returncode})"] if popen and popen.poll() is not None else []
        return dead + super().problems()

    def down(self, keep_logs_in: Path | None = None) -> None:
        self.guests.clear()
        self.server = None  # recorded in the lab's record: the lab's teardown stops it
        super().down(keep_logs_in)  # agents (the guests) first, then the lab with their record
