"""The pre-flight: every check `run` makes before it creates anything, in one place `validate` uses too.

Nothing here touches the machine: what it needs to know of it (fio's engines, free
disk space) comes in an ``Environment``, so the same rules run in unit tests, in
``protolab validate`` and at the start of ``protolab run``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import PlanError
from .model import Configuration, Plan, Workload
from .protocols import PROTOCOLS, lab_targets
from .servers import kernel_path, kernel_protocols, pool_need, uses_knfsd
from .target_grammar import TargetRef, looks_like_target, parse_target
from .units import format_size

ALIGN = 1024 * 1024  # stream regions start on 1 MiB boundaries
#: Longest Linux interface name (IFNAMSIZ - 1).
IFNAME_MAX = 15
#: fio engines the URL targets use.


def region(size: int, streams: int, workload: Workload) -> int:
    """Bytes per stream: an equal share of the target, aligned, at least one block of the largest size."""
    largest = max(workload.sizes())
    share = size // streams
    share -= share % ALIGN if share >= ALIGN else share % largest
    if share < largest:
        raise ValueError(f"{format_size(size)} bytes of data shared by {streams} streams leaves less than one "
                         f"{format_size(largest)} block per stream")
    return share


@dataclass(frozen=True)
class Environment:
    """What the pre-flight may know of the machine; None means unknown (that check is skipped)."""

    fio_engines: frozenset[str] | None = None
    free_bytes: Callable[[Path], int | None] = field(default=lambda _p: None)
    lab_workdir: Path | None = None
    netem: bool | None = None  # whether the kernel offers netem (link delay and loss): lab.netns.kernel_netem

    @classmethod
    def of_machine(cls, fio_engines: list[str] | None, lab_workdir: Path | None,
                   netem: bool | None = None) -> "Environment":
        """This machine: the engines the caller's fio lists, free space of the lab workdir's disk, netem as the
        caller probed it."""
        return cls(frozenset(fio_engines) if fio_engines else None, _free_bytes, lab_workdir, netem)


def _free_bytes(path: Path) -> int | None:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    import shutil

    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def lab_protocols(plan: Plan) -> set[str]:
    """The lab targets a plan's configurations use (``lab:iscsi`` → ``iscsi``)."""
    out = set()
    for c in plan.configurations:
        ref = parse_target(plan.target_of(c).url)
        if ref.lab:
            out.add(ref.lab)
    return out


def target_ref(plan: Plan, index: int, source: str) -> TargetRef:
    """Configuration ``index``'s target, parsed; a one-line PlanError when it names nothing usable."""
    c = plan.configurations[index]
    where = f"{source}: configurations[{index}] ({c.name}).target"
    if isinstance(c.target, str) and c.target not in plan.targets and not looks_like_target(c.target):
        close = difflib.get_close_matches(c.target, list(plan.targets), n=1)
        hint = (f"did you mean {close[0]!r}?" if close else
                f"[targets] names {', '.join(plan.targets) or 'nothing'}")
        raise PlanError(f"{where}: {c.target!r} is not a [targets] name, a URL or a path with '/'; {hint} "
                        "(write ./NAME for a file in this directory)")
    try:
        return parse_target(plan.target_of(c).url)
    except ValueError as e:
        raise PlanError(f"{where}: {e}") from None


def preflight(plan: Plan, source: str, env: Environment | None = None) -> None:
    """Raise a one-line PlanError for anything `run` would refuse; create nothing."""
    env = env or Environment()
    _attach(plan, source)
    refs = [target_ref(plan, i, source) for i in range(len(plan.configurations))]
    for name, t in plan.targets.items():
        try:
            parse_target(t.url)
        except ValueError as e:
            raise PlanError(f"{source}: targets.{name}.url: {e}") from None
    _method(plan, source, refs)
    _lab(plan, source, refs, env)
    _hypervisor(plan, source, refs)
    _engines(plan, source, refs, env)
    _replay(plan, source, refs)
    _regions(plan, source, refs)
    _local_space(plan, source, refs, env)


def _attach(plan: Plan, source: str) -> None:
    """A target protolab attaches on the hosts (plan.attach; run.attaching does it): on this machine or on hosts
    protolab reaches over ssh, never beside the lab (whose testbed attaches nothing) or on a fio:// host (which runs
    no command for protolab)."""
    for i, c in enumerate(plan.configurations):
        t = plan.target_of(c)
        if t.attach is None:
            continue
        where = (f"targets.{c.target}.attach" if isinstance(c.target, str)
                 else f"configurations[{i}] ({c.name}).target.attach")
        if plan.uses_lab() or plan.hypervisor is not None:
            raise PlanError(f"{source}: {where}: attach is for this machine or the plan's [[hosts]]; a plan with "
                            "lab: targets or [hypervisor] runs on the lab: give this configuration lab:PROTOCOL, "
                            "or move it to a plan of its own")
        # engine.targets' rule for every block device (a file export holds protolab's own file only)
        if not PROTOCOLS[t.attach.protocol].own_file and not t.allow_overwrite:
            raise PlanError(f"{source}: {where}: {t.attach.describe()} is a block device on each host: protolab "
                            "cannot tell whether it holds data (blkid finds no signature on dm-crypt, raw database "
                            "devices or wiped headers); add allow_overwrite = true to the target if its contents "
                            "may be destroyed")
        for h in plan.hosts:
            if h.agent.startswith("fio://"):
                raise PlanError(f"{source}: {where}: host {h.name!r} is a fio:// server, on which protolab runs no "
                                "command and so cannot attach; give it agent = \"ssh://[USER@]HOST\"")


def _hypervisor(plan: Plan, source: str, refs: list[TargetRef]) -> None:
    """VMs are the lab's load hosts: every target is a lab export they reach over the network."""
    hv = plan.hypervisor
    if hv is None:
        for c in plan.configurations:
            if c.controller is not None:
                raise PlanError(f"{source}: configuration {c.name!r}: controller applies to virtual machines; add a "
                                "[hypervisor] section or remove controller")
        return
    if plan.hosts:
        raise PlanError(f"{source}: hypervisor: VMs run on the embedded lab's hosts, not on [[hosts]]; remove one")
    if any(lp.hosts != 1 for lp in plan.load_points):
        raise PlanError(f"{source}: load_points: with [hypervisor] a load point runs on one lab host (hosts = 1) "
                        "with hypervisor.vms_per_host VMs on it; several hosts of VMs are not supported yet")
    for c, r in zip(plan.configurations, refs):
        url = plan.target_of(c).url
        # QEMU's initiators, the guests' kernels, or (lab:local) QEMU on the pool's file: the baseline with no wire
        vm_targets = [f"lab:{p.name}" for p in PROTOCOLS.values()
                      if p.lab and (p.qemu or p.name in kernel_protocols() or p.name == "local")]
        if url not in vm_targets:
            raise PlanError(f"{source}: configuration {c.name!r}: target {url} cannot be a VM's disk; with "
                            f"[hypervisor] every target is {', '.join(vm_targets[:-1])} or {vm_targets[-1]}")
        if c.controller is not None and kernel_path(url, c.server):
            raise PlanError(f"{source}: configuration {c.name!r}: controller applies to disks QEMU attaches; the "
                            f"guest's kernel attaches {url} itself; remove controller")
        if c.controller is not None and hv.queues is not None and c.controller not in ("virtio-blk", "virtio-scsi"):
            raise PlanError(f"{source}: configuration {c.name!r}: hypervisor.queues applies to virtio controllers "
                            f"only, not {c.controller}; remove queues or use virtio-blk/virtio-scsi")


def _replay(plan: Plan, source: str, refs: list[TargetRef]) -> None:
    """A replay's per-stream iologs are written in the run directory on this machine, and fio reads them by
    path: only load hosts that see this machine's files (itself, the lab's namespaces) can replay."""
    replays = [w.name for w in plan.workloads if w.replay is not None]
    if not replays:
        return
    where = ("[hypervisor] guests" if plan.hypervisor is not None else
             next((f"host {h.name!r} ({h.agent})" for h in plan.hosts if h.agent != "local"), None))
    if where is not None:
        raise PlanError(f"{source}: workload {replays[0]!r}: replay runs only on load hosts that see this "
                        f"machine's files, not on {where}; use this machine or the embedded lab's hosts")
    for c, r in zip(plan.configurations, refs):
        p = PROTOCOLS.get(r.protocol or "")
        if p is not None and p.no_replay:
            can = [q.name for q in PROTOCOLS.values() if q.engine and not q.no_replay]
            raise PlanError(f"{source}: configuration {c.name!r}: workload {replays[0]!r} replays a trace, which "
                            f"{p.no_replay}; replay over {', '.join(can)} or a local path, or remove this "
                            "configuration")


def _local_space(plan: Plan, source: str, refs: list[TargetRef], env: Environment) -> None:
    """A data file protolab would create or grow fits the free space of its disk (block devices are as they are)."""
    import stat

    from ..conventions import DATA_FILE

    if any(h.agent != "local" for h in plan.hosts):
        return  # the paths are on the load hosts: this machine's files and disks say nothing of them
    for c, r in zip(plan.configurations, refs):
        if r.kind != "path":
            continue
        path = Path(r.text)
        if path.is_dir():
            path = path / DATA_FILE
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None and stat.S_ISBLK(st.st_mode):
            continue
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a character device (/dev/mem, /dev/port), FIFO or socket has no contents to check: never a target
            raise PlanError(f"{source}: configuration {c.name!r}: target {r.text} is not a regular file, directory "
                            "or block device; give a file, a directory or a block device")
        grow = target_bytes(plan, c, r) - (st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0)
        free = env.free_bytes(path.parent) if grow > 0 else None
        if free is not None and grow > free:
            raise PlanError(f"{source}: configuration {c.name!r}: target {r.text} needs {format_size(grow)} more "
                            f"but its disk has {free // 1024**3} GiB free; lower the target's size (or "
                            "method.data_size) or choose another place")


def _method(plan: Plan, source: str, refs: list[TargetRef]) -> None:
    from .library import BUILTIN_WORKLOADS

    m = plan.method
    uses_lab = any(r.is_lab for r in refs)
    if m.restore and not uses_lab:
        raise PlanError(f"{source}: method.restore: restoring needs the embedded lab's pool snapshots; "
                        "use lab targets (lab:PROTOCOL) or set restore = false")
    if m.initialise is not None and m.initialise.workload not in BUILTIN_WORKLOADS:
        close = difflib.get_close_matches(m.initialise.workload, list(BUILTIN_WORKLOADS), n=1)
        raise PlanError(f"{source}: method.initialise.workload: unknown workload {m.initialise.workload!r}; "
                        + (f"did you mean {close[0]!r}? " if close else "") + "run 'protolab workloads'")


def _lab(plan: Plan, source: str, refs: list[TargetRef], env: Environment) -> None:
    uses_lab = any(r.is_lab for r in refs)
    for i, (c, r) in enumerate(zip(plan.configurations, refs)):
        if c.link and not r.is_lab:
            raise PlanError(f"{source}: configurations[{i}] ({c.name}).link: link settings apply only to lab "
                            "targets (lab:PROTOCOL); remove link or use a lab target")
    if not uses_lab:
        return
    lab = plan.lab
    assert lab is not None  # the loader gives a lab plan the lab's defaults
    for i, c in enumerate(plan.configurations):
        try:
            lab.link.merged(c.link)
        except Exception as e:  # ValueError or pydantic's ValidationError: both name the setting
            msg = e.errors(include_url=False)[0]["msg"] if hasattr(e, "errors") else str(e)
            raise PlanError(f"{source}: configurations[{i}] ({c.name}).link: "
                            f"{msg.removeprefix('Value error, ')}") from None
    if env.netem is False:
        _netem(plan, source)
    most = max(lp.hosts for lp in plan.load_points)
    if most > lab.hosts:
        raise PlanError(f"{source}: load_points: a load point asks for {most} hosts but the lab has "
                        f"{lab.hosts}; raise lab.hosts or lower the load point")
    longest = max([f"{lab.prefix}s{lab.storage_ports - 1}b", f"{lab.prefix}h{lab.hosts - 1}n{lab.nics_per_host - 1}b"],
                  key=len)
    if len(longest) > IFNAME_MAX:
        raise PlanError(f"{source}: lab.prefix: interface {longest!r} would be longer than {IFNAME_MAX} "
                        "characters; use a shorter prefix")
    protocols = {r.lab for r in refs if r.is_lab}
    knfsd = uses_knfsd(plan.configurations)
    need = pool_need(len(protocols), lab.export_bytes, knfsd)
    if lab.pool_bytes < need:
        raise PlanError(f"{source}: lab.pool_size: {lab.pool_size} is too small for {len(protocols) + knfsd} export(s) "
                        f"of {lab.export_size}; set lab.pool_size to at least {format_size(need)}")
    where = env.lab_workdir
    free = env.free_bytes(where) if where is not None else None
    if free is not None and free < lab.pool_bytes:
        # whole GiB: other programs change the free space between two checks; the message stays the same
        raise PlanError(f"{source}: lab.pool_size: {lab.pool_size} does not fit the {free // 1024**3} GiB free "
                        f"on the disk of {where}; lower lab.pool_size or choose another --lab-workdir")
    assert protocols <= set(lab_targets())


def _netem(plan: Plan, source: str) -> None:
    """On a kernel without netem, no link of the lab may ask for delay or loss: the lab's own (set when it comes
    up) or a configuration's (set before its cells); a swept link changes the rate only."""
    assert plan.lab is not None
    links = [("lab.link", plan.lab.link, {})] + [(f"configurations[{i}] ({c.name}).link", plan.lab.link.merged(c.link),
                                                  c.link or {}) for i, c in enumerate(plan.configurations)]
    for where, link, own in links:
        for name, asked in (("delay", link.delay_us), ("loss_pct", link.loss_pct)):
            if asked and (where == "lab.link" or name in own):
                raise PlanError(f"{source}: {where}.{name}: link delay and loss need the kernel's netem qdisc "
                                "(sch_netem), which this kernel does not have; remove delay and loss_pct, or run on "
                                "a kernel with netem")


def _engines(plan: Plan, source: str, refs: list[TargetRef], env: Environment) -> None:
    engines = env.fio_engines
    if engines is None:
        return
    for i, (c, r) in enumerate(zip(plan.configurations, refs)):
        protocol = PROTOCOLS.get(r.protocol or "")
        by_url = protocol is not None and protocol.engine is not None and r.kind != "attach"
        wanted = protocol.engine if by_url else (c.ioengine or "io_uring")
        if wanted not in engines:
            field_name = "target" if by_url else "ioengine"
            raise PlanError(f"{source}: configurations[{i}] ({c.name}).{field_name}: this fio has no {wanted!r} "
                            f"engine (it lists {', '.join(sorted(engines))}); run 'protolab doctor'")


def target_bytes(plan: Plan, c: Configuration, ref: TargetRef) -> int:
    """The bytes of data a configuration's streams share."""
    t = plan.target_of(c)
    if ref.is_lab and plan.lab is not None:
        return min(plan.lab.export_bytes, t.size or plan.lab.export_bytes)
    return t.size or plan.method.data_size


def _regions(plan: Plan, source: str, refs: list[TargetRef]) -> None:
    for i, (c, r) in enumerate(zip(plan.configurations, refs)):
        size = target_bytes(plan, c, r)
        for w in plan.workloads:
            for j, lp in enumerate(plan.load_points):
                try:
                    region(size, lp.hosts * lp.streams, w)
                except ValueError as e:
                    raise PlanError(f"{source}: load_points[{j}]: configuration {c.name!r}, workload {w.name!r}: "
                                    f"{e}; raise the target's size (or method.data_size / lab.export_size) "
                                    "or lower the streams") from None
