"""The ``Lab`` facade: build the topology, the pool and the servers; hand out endpoints; tear down."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtolabError
from ..plan.protocols import PROTOCOLS, lab_targets
from ..plan.servers import pool_need
from ..plan.topology import LabSpec, LinkSpec
from ..plan.units import format_size
from ..proc import Runner, SubprocessRunner
from ..telemetry.cgroups import RoleCgroups
from ..trust import check_dir, check_workdir, secure_dir
from . import holder
from .device import BlockDevice
from .device import describe as describe_device
from .fault_controls import LabFaults
from .fsvolume import FsVolume
from .names import GUEST_SLOTS, LAB_ROOT, Names, default_workdir  # noqa: F401 (re-exported)
from .netns import Net
from .pool import DATA_FILE, Pool
from .procs import Processes
from .record import Record
from .servers import ADAPTERS, Adapter, Serving, adapter, path_caches
from .teardown import down_all, undo_record


@dataclass(frozen=True)
class Endpoint:
    """How a load generator reaches one export: protocol, URL (or path), namespace, data size."""

    protocol: str
    url: str
    netns: str
    size_bytes: int


class Lab:
    """An embedded lab: namespaces, switch, shaped links, a btrfs pool and protocol servers."""

    def __init__(self, spec: LabSpec, protocols: set[str], workdir: Path,
                 runner: Runner | None = None, knfsd: bool = False):
        unknown = sorted(set(protocols) - set(lab_targets()))
        if unknown:
            raise ProtolabError(
                f"lab: unknown protocol(s) {', '.join(unknown)}; a lab target is one of "
                + ", ".join(f"lab:{p}" for p in lab_targets()))
        self.spec = spec
        self.protocols = set(protocols)
        self.workdir = Path(workdir)
        self.runner = runner or SubprocessRunner()
        self.names = Names(spec)
        self.net = Net(self.runner)
        self.link = spec.link
        self.knfsd = knfsd  # the pool has a knfsd volume (lab.fsvolume): a server guest's knfsd exports it
        self._fs: FsVolume | None = None
        self._record: Record | None = None
        self._procs: Processes | None = None
        self._pool: Pool | None = None
        self._up = False
        self._attached = False  # this object built the lab or was given its record
        self._holder: holder.Holder | None = None
        self.holder_kind = "run"  # 'lab up' labs outlive their process: "lab-up"

    # life cycle
    def up(self) -> None:
        """Build the lab; a second call is a no-op; on failure, tear down what was made, then re-raise."""
        if self._up:
            return
        check_workdir(self.workdir)  # root-owned, under parents no other user can swap: refused otherwise
        if Record.exists(self.workdir):
            raise ProtolabError(
                f"a lab is already up in {self.workdir}; run 'protolab lab down --workdir {self.workdir}' first")
        self._check_pool_size()
        prefix = self.spec.prefix
        ours = holder.made(prefix)  # read before this lab takes the prefix (and sweeps what a gone holder left)

        def sweep(gone: holder.Holder | None) -> None:
            down_all(prefix, self.runner, workdirs=[Path(gone.workdir)] if gone else [])

        self._holder = holder.acquire(prefix, self.workdir, self.holder_kind, sweep)
        clash = [ns for ns in self.net.list_netns() if ns.startswith(f"{prefix}-")]
        if clash:  # another program's namespaces, or what the sweep of a gone holder could not remove
            holder.release(self._holder)
            self._holder = None
            if ours:
                raise ProtolabError(f"namespaces with the lab prefix '{prefix}' exist already ({', '.join(clash)}), "
                                    f"left by a protolab lab; run 'protolab lab down --all --prefix {prefix}' or "
                                    "set another lab.prefix")
            raise ProtolabError(f"namespaces with the lab prefix '{prefix}' exist already ({', '.join(clash)}) and "
                                "no holder shows protolab made them (another program's, perhaps); set another "
                                "lab.prefix in the plan's [lab]")
        try:
            secure_dir(self.workdir)  # created (0700) only once the prefix is ours: a refused lab makes nothing
        except BaseException:
            holder.release(self._holder)
            self._holder = None
            raise
        self._attach(Record.create(self.workdir, self.spec.model_dump(mode="json"), sorted(self.protocols)))
        self._record.set_state(holder_pid=self._holder.pid)
        try:
            self._build()
        except BaseException as exc:
            try:
                self.down()
            except Exception as cleanup:  # the first error is the one the user needs
                exc.add_note(f"teardown after the failure also failed: {cleanup}")
            raise
        self._up = True

    def down(self, keep_logs_in: Path | None = None) -> list[str]:
        """Complete teardown from the record, the servers' logs first copied to ``keep_logs_in`` (when given); safe
        to call twice. Returns what was removed."""
        if self._record is None:
            # a Lab that never came up (refused: the prefix or workdir belongs to another lab) owns nothing
            if not self._attached or not Record.exists(self.workdir):
                self._up = False
                return []
            check_dir(self.workdir)
            rec = Record.load(self.workdir)
            rec.check_resources(self.workdir, self.spec.prefix)
            self._attach(rec)
        assert self._record is not None and self._procs is not None
        removed = undo_record(self._record, self.runner, self._procs)
        self._record = None
        self._up = False
        if not Record.exists(self.workdir):  # everything recorded is gone: the lab's own files go too
            self.clean_workdir(keep_logs_in)
            h = self._holder or holder.read(self.spec.prefix)
            if h is not None and h.workdir == str(self.workdir.absolute()):
                holder.release(h)
        self._holder = None
        return removed

    #: What a lab writes in its workdir besides recorded resources (logs, mount points), and its servers' own files.
    WORKDIR_FILES = ("logs", "vm", *(f for a in ADAPTERS.values() for f in a.workdir_files))  # vm: guests (run/vmbed)

    def clean_workdir(self, keep_logs_in: Path | None = None) -> None:
        """Copy the servers' logs to ``keep_logs_in`` (a run directory), then remove what the lab wrote.

        Only the lab's own files are removed, and the workdir itself only when that leaves it empty
        (a --lab-workdir may be a directory the user keeps other things in).
        """
        logs = [p for p in (self.workdir / "logs").glob("*.log")]
        logs += [self.workdir / f for f in self.WORKDIR_FILES if f.endswith(".log")]  # a server's own log
        logs += list((self.workdir / "vm").glob("*.log"))  # the guests' consoles and QEMU output
        if keep_logs_in is not None:
            keep_logs_in.mkdir(parents=True, exist_ok=True)
            for log in logs:
                if log.is_file():
                    shutil.copyfile(log, keep_logs_in / log.name)
        for name in (*self.WORKDIR_FILES, self.names.mount_dir):
            p = self.workdir / name
            if p.is_dir() and not p.is_symlink():
                if name == self.names.mount_dir:
                    for sub in sorted(p.rglob("*"), reverse=True):  # empty mount points only, never data
                        if sub.is_dir() and not os.path.ismount(sub):
                            with contextlib.suppress(OSError):
                                sub.rmdir()
                    with contextlib.suppress(OSError):
                        p.rmdir()
                else:
                    shutil.rmtree(p, ignore_errors=True)
            elif p.exists() or p.is_symlink():
                p.unlink()
        with contextlib.suppress(OSError):
            self.workdir.rmdir()

    @classmethod
    def from_record(cls, workdir: Path, runner: Runner | None = None) -> Lab:
        """Reattach to a lab left up in ``workdir`` (for ``lab status`` and ``lab down``)."""
        check_dir(Path(workdir))  # a record is trusted only where no other user could have written it
        rec = Record.load(Path(workdir))
        lab = cls(LabSpec.model_validate(rec.spec), set(rec.protocols), Path(workdir), runner)
        rec.check_resources(Path(workdir), lab.spec.prefix)
        lab._attach(rec)
        lab._up = bool(rec.state.get("up"))
        if "link" in rec.state:
            lab.link = LinkSpec.model_validate(rec.state["link"])
        return lab

    def _attach(self, record: Record) -> None:
        self._record = record
        self._attached = True
        self._procs = Processes(self.runner, record, self.workdir / "logs")
        device = None
        if not self.spec.device.is_ram:
            device = BlockDevice(self.runner, self._procs, self.spec.device, self.workdir / self.names.pool_image,
                                 self._mounts / self.names.device_mount, self.names.device_disk)
        self._pool = Pool(self.runner, record, self.workdir / self.names.pool_image,
                          self._mounts / self.names.pool_mount, self.spec.pool_bytes, self.spec.cow, device)

    @property
    def is_up(self) -> bool:
        """True once up() built the lab (or a reattached record says it is up)."""
        return self._up

    @property
    def fs_volume(self) -> FsVolume | None:
        """The knfsd volume when the lab has one (knfsd_volume: the same, refused while the lab is down)."""
        return self._fs

    @property
    def blockdev(self) -> BlockDevice | None:
        """The pool's device model's daemon (lab.device; None: the RAM pool, or no pool yet)."""
        return self._pool.device if self._pool is not None else None

    @property
    def record(self) -> Record:
        """The lab's record of what it made (guests add their QEMU to it); the lab must be up or reattached."""
        if self._record is None:
            raise ProtolabError("lab record: the lab is not up; run 'protolab lab up PLAN' first")
        return self._record

    @property
    def _mounts(self) -> Path:
        return self.workdir / self.names.mount_dir

    def _check_pool_size(self) -> None:
        n = len(self.protocols) + self.knfsd
        need = pool_need(len(self.protocols), self.spec.export_bytes, self.knfsd)
        if self.spec.pool_bytes < need:
            raise ProtolabError(
                f"lab.pool_size {self.spec.pool_size} is too small for {n} export(s) of "
                f"{self.spec.export_size}; set lab.pool_size to at least {format_size(need)}")

    def _build(self) -> None:
        rec, names = self._record, self.names
        assert rec is not None and self._pool is not None and self._procs is not None
        for ns in names.namespaces():
            rec.add("netns", ns)
            self.net.add_netns(ns)
        self.net.add_bridge(names.switch_ns, names.bridge)
        for link in names.links():
            self.net.add_link(link, names.bridge)
        self.set_link(self.spec.link)
        cg = RoleCgroups(self.spec.prefix)
        if cg.available:  # CPU per role (servers, load generators); teardown removes it
            rec.add("cgroup", str(cg.group))
            cg.create()
            self._procs.cgroups = cg
        self._pool.create()
        for p in sorted(self.protocols):
            self._pool.add_volume(p, self.spec.export_bytes)
        if self.knfsd:
            self._fs = FsVolume(self.runner, rec, self._pool, self._mounts / names.knfsd_mount, names.knfsd_image,
                                self.spec.export_bytes)
            self._fs.create()
        for p in sorted(self.protocols):  # each export's own server (plan.protocols), by its adapter (lab.servers)
            server = self.server_of(p)
            if server is not None:
                server.start(self._serving(p))
        rec.set_state(up=True)

    def _serving(self, protocol: str) -> Serving:
        assert self._procs is not None and self._pool is not None
        return Serving(self.runner, self._procs, self.names, self.spec, self.workdir, self._mounts, self._pool,
                       protocol, self._granted_addresses(protocol))

    @property
    def faults(self) -> LabFaults:
        """The lab's fault controls (lab.fault_controls), each recorded so that its restore() or teardown undoes it."""
        self._need_up("faults")
        assert self._record is not None and self._procs is not None and self._pool is not None
        return LabFaults(self.runner, self._record, self._procs, self.names, self.link, self._pool.device,
                         self._serving)

    @staticmethod
    def server_of(protocol: str) -> Adapter | None:
        """The adapter of the server the lab runs for ``protocol``'s export (None: lab:local, no server)."""
        return adapter(PROTOCOLS[protocol].server)

    def _granted_addresses(self, protocol: str) -> list[str]:
        """The addresses ``protocol``'s export admits: every admitted host's NICs and, when its server's clients are
        the load guests' kernels, every address a guest on those hosts' subnets can have (numbered as they boot)."""
        access = self.spec.access(protocol)
        hosts = [h for h in range(self.spec.hosts) if access.admits(h)]
        out = [a for h in hosts for a in self.names.host_addresses(h)]
        server = self.server_of(protocol)
        if server is not None and server.guests:
            out += [a for a in dict.fromkeys(self.names.load_guest_address(h, s) for h in hosts
                                             for s in range(GUEST_SLOTS)) if a not in out]
        return out

    def _need_up(self, what: str) -> None:
        if not self._up:
            raise ProtolabError(f"lab {what}: the lab is not up; run 'protolab lab up PLAN' first")

    # between cells
    def set_link(self, link: LinkSpec) -> None:
        """Apply rate, MTU, delay, loss and offloads to every lab link, both ends, in place."""
        if link.delay_us or link.loss_pct:
            self.net.check_netem(self.names.switch_ns)  # before touching any link
        for l in self.names.links():
            self.net.configure(l, link)
        self.link = link
        if self._record is not None:
            self._record.set_state(link=link.model_dump(mode="json"))

    def set_service_time(self, service_us: int) -> None:
        """Serve the pool's device model at a swept mean service time (plan.sweep) from the next request on, without
        re-provisioning (lab.pool.Pool.set_model)."""
        self._need_up("set_service_time")
        assert self._pool is not None
        from ..plan.sweep import at_service_time

        self._pool.set_model(at_service_time(self.spec.device, service_us))

    def snapshot(self) -> None:
        """Snapshot the whole pool (every export's volume)."""
        self._need_up("snapshot")
        assert self._pool is not None and self._record is not None
        self._pool.snapshot()
        self._record.set_state(snapshot=True)

    def restore(self) -> None:
        """Bring every export back to the snapshot; servers keep serving, now the restored bytes."""
        self._need_up("restore")
        assert self._pool is not None
        self._pool.restore()

    # what the run needs
    def endpoint(self, protocol: str, host: int = 0, nic: int = 0) -> Endpoint:
        """How host ``host``'s NIC ``nic`` reaches the export of ``protocol`` (``local``: the storage side)."""
        self._need_up("endpoint")
        assert self._pool is not None
        if protocol not in self.protocols:
            raise ProtolabError(
                f"lab has no {protocol} export (it serves {', '.join(sorted(self.protocols))}); "
                f"add a configuration with target 'lab:{protocol}'")
        if not 0 <= host < self.spec.hosts:
            raise ProtolabError(f"lab has no host {host} (lab.hosts = {self.spec.hosts})")
        if not 0 <= nic < self.spec.nics_per_host:
            raise ProtolabError(f"lab has no NIC {nic} (lab.nics_per_host = {self.spec.nics_per_host})")
        size = self.spec.export_bytes
        server = self.server_of(protocol)
        if server is None:  # lab:local: the pool's file, from the storage side
            return Endpoint(protocol, str(self._pool.volume(protocol) / DATA_FILE), self.names.storage_ns, size)
        data = server.data_file(self.names, self._mounts, self._pool, protocol)
        url = server.url(self.names, protocol, self.spec.port_of(host, nic), data)
        return Endpoint(protocol, url, self.names.host_ns(host), size)

    def export_file(self, protocol: str) -> Path:
        """The data file of ``protocol``'s volume, as the storage side sees it (a server guest's disk)."""
        self._need_up("export_file")
        assert self._pool is not None
        if protocol not in self.protocols:
            raise ProtolabError(f"lab has no {protocol} export (it serves {', '.join(sorted(self.protocols))})")
        return self._pool.volume(protocol) / DATA_FILE

    @property
    def knfsd_volume(self) -> FsVolume:
        """The knfsd volume (lab.fsvolume): its ext4 image, and its data file while this host holds it."""
        self._need_up("knfsd volume")
        if self._fs is None:
            raise ProtolabError("lab has no knfsd volume (no configuration is served by server = \"knfsd\")")
        return self._fs

    @property
    def cgroups(self) -> RoleCgroups | None:
        """The lab's role cgroups (servers, loadgen, hypervisors), or None when it has none."""
        found = self._record.find("cgroup") if self._record is not None else []
        return RoleCgroups.at(Path(found[0].name)) if found else None

    def server_pids(self) -> dict[str, int]:
        """Pids of the running servers by program name (tgtd, rpcbind, ganesha.nfsd, nbdkit)."""
        if self._record is None or self._procs is None:
            return {}
        return {r.name: r.extra["pid"] for r in self._record.find("process")
                if not r.name.endswith("-parent") and self._procs.running(r)}

    def dead_servers(self) -> list[str]:
        """The lab's servers that should run and do not: 'nbdkit (pid 123)'."""
        if self._record is None or self._procs is None:
            return []
        return [f"{r.name} (pid {r.extra.get('pid')})" for r in self._record.find("process")
                if not r.name.endswith("-parent") and not self._procs.running(r)]

    def device(self) -> dict:
        """The pool's device model, its figures, the cache each path had above it and the stack's measured
        overhead (lab.device)."""
        state = self._record.state if self._record is not None else {}
        caches = path_caches({p: PROTOCOLS[p].server for p in sorted(self.protocols)}, self.spec.device.write_us > 0)
        return describe_device(self.spec.device, caches, state.get("device_overhead_us"),
                               state.get("device_write_overhead_us"))

    def interfaces(self) -> list[tuple[str, str]]:
        """(namespace, interface) of every link end."""
        return [(e.netns, e.ifname) for l in self.names.links() for e in (l.near, l.switch)]

    def describe(self) -> str:
        """Topology, addresses, exports and how to reach each, for people (lab.describe)."""
        from .describe import describe

        return describe(self)
