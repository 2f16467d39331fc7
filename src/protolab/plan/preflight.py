"""The pre-flight: everything `run` checks before it creates anything, and `validate` checks too.

``preflight(plan, source, env)`` is called by both commands, so a plan `validate` calls
valid is a plan `run` starts. It checks the plan's rules across fields, each
configuration's merged link, every target URL in full, the lab (protocols, sizes,
interface names), each stream's data region, and what depends on this machine (fio's
engines, the free space under the lab's pool) through ``env``, a small probe that tests
replace.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..errors import PlanError, ProtolabError
from .expand import Cell
from .library import BUILTIN_WORKLOADS
from .model import Configuration, LoadPoint, Plan

LAB_TARGETS = ("iscsi", "nfs", "nbd", "local")  # lab:PROTOCOL
URL_ENGINES = {"iscsi": "libiscsi", "nfs": "nfs", "nbd": "nbd"}
IFNAME_MAX = 15  # Linux IFNAMSIZ - 1
POOL_HEADROOM = 256 * 1024**2  # as protolab.lab.lab: btrfs metadata and the system chunk


@dataclass
class Env:
    """What the pre-flight asks of this machine: fio's engines and the free bytes under a folder."""

    engines: Callable[[], Iterable[str]]
    free_bytes: Callable[[Path], int]
    lab_workdir: Path | None = None
    runner: object | None = None  # when set, local targets get run's overwrite check (blkid through it)
    _engines: list[str] | None = field(default=None, repr=False)

    def engine_list(self) -> list[str]:
        """fio's engines, asked once."""
        if self._engines is None:
            self._engines = list(self.engines())
        return self._engines


def free_bytes(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def system_env(runner=None, fio=None, lab_workdir: Path | None = None) -> Env:
    """The Env of this machine: ``fio`` (or the located one) and the real disk."""

    def engines() -> list[str]:
        from ..engine.fio import Fio  # only when asked: validate of a plan without fio still needs it

        return (fio or Fio.locate(runner)).engines()

    if runner is None:
        from ..proc import SubprocessRunner

        runner = SubprocessRunner()
    return Env(engines=engines, free_bytes=free_bytes, lab_workdir=lab_workdir, runner=runner)


def preflight(plan: Plan, source: str, env: Env) -> None:
    """Raise a one-line ProtolabError for the first thing that would stop `run`; return when there is none."""
    plan_rules(plan, source)
    for c in plan.configurations:
        _target(plan, c, source, env)
    if plan.uses_lab():
        _lab(plan, source, env)
    _regions(plan, source)


def plan_rules(plan: Plan, source: str) -> None:
    """Rules across fields that need no machine: restore, initialisation, hosts, links."""
    m = plan.method
    if m.restore and not plan.uses_lab():
        raise PlanError(f"{source}: method.restore: restoring needs the embedded lab's pool snapshots; "
                        "use lab targets (lab:PROTOCOL) or set restore = false")
    if m.initialise is not None and m.initialise.workload not in BUILTIN_WORKLOADS:
        raise PlanError(f"{source}: method.initialise.workload: unknown workload "
                        f"{m.initialise.workload!r}; run 'protolab workloads'")
    if m.warmup_until_steady and m.warmup < m.steady_window:
        raise PlanError(f"{source}: method.warmup: {m.warmup:g}s is shorter than steady_window "
                        f"({m.steady_window}s); raise warmup or lower steady_window")
    most = max(lp.hosts for lp in plan.load_points)
    if plan.uses_lab() and plan.lab is not None and most > plan.lab.hosts:
        raise PlanError(f"{source}: load_points: a load point asks for {most} hosts but the lab has "
                        f"{plan.lab.hosts}; raise lab.hosts or lower the load point")
    for i, c in enumerate(plan.configurations):
        if not c.link:
            continue
        if not plan.uses_lab():
            raise PlanError(f"{source}: configurations[{i}].link: link settings need the embedded lab; "
                            "use lab targets (lab:PROTOCOL) or remove link")
        _merged_link(plan, c, f"configurations[{i}].link", source)


def _merged_link(plan: Plan, c: Configuration, where: str, source: str):
    from pydantic import ValidationError

    from .topology import LinkSpec

    base = plan.lab.link if plan.lab is not None else LinkSpec()
    try:
        return base.merged(c.link)
    except ValidationError as e:
        err = e.errors()[0]
        field_name = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        got = "" if err["type"] == "value_error" else f" (got {err.get('input')!r})"
        raise PlanError(f"{source}: {where}.{field_name}: {msg}{got}; see README: The lab") from None
    except (ValueError, TypeError) as e:
        raise PlanError(f"{source}: {where}: {e}") from None


def _target(plan: Plan, c: Configuration, source: str, env: Env) -> None:
    from ..engine.targets import check_url

    url = plan.target_of(c).url
    where = f"{source}: configuration {c.name!r}"
    if url.startswith("lab:"):
        proto = url[len("lab:"):]
        if proto not in LAB_TARGETS:
            raise PlanError(f"{where}: target {url!r}: unknown lab protocol {proto!r}; "
                            f"use one of: {', '.join('lab:' + p for p in LAB_TARGETS)}")
        engine = (c.ioengine or "io_uring") if proto == "local" else URL_ENGINES[proto]
    else:
        try:
            scheme = check_url(url)
        except ProtolabError as e:
            raise PlanError(f"{where}: {e}") from None
        engine = URL_ENGINES.get(scheme) or c.ioengine or "io_uring"
        if env.runner is not None:
            _overwrite(plan, c, env)
    engines = env.engine_list()
    if engine not in engines:
        raise PlanError(f"{where}: fio engine {engine!r} is not in this fio (it has: {', '.join(engines)}); "
                        "choose another ioengine or rebuild fio with 'make deps'")


def _overwrite(plan: Plan, c: Configuration, env: Env) -> None:
    """run's data-safety check of a local or URL target, made before anything exists."""
    from ..engine.targets import check_overwrite, resolve

    t = plan.target_of(c)
    a = resolve(t.url, size=t.size or plan.method.data_size, ioengine=c.ioengine, direct=c.direct)
    check_overwrite(a, allow_overwrite=t.allow_overwrite, runner=env.runner, label=f"configuration {c.name!r}")


def _lab(plan: Plan, source: str, env: Env) -> None:
    lab = plan.lab
    assert lab is not None
    protocols = {plan.target_of(c).url[len("lab:"):] for c in plan.configurations
                 if plan.target_of(c).url.startswith("lab:")}
    n = len(protocols)
    need = n * lab.export_bytes + POOL_HEADROOM
    if lab.pool_bytes < need:
        from .units import format_size

        raise PlanError(f"{source}: lab.pool_size {lab.pool_size} is too small for {n} export(s) of "
                        f"{lab.export_size}; set lab.pool_size to at least {format_size(need)}")
    workdir = env.lab_workdir or Path("/var/tmp/protolab-lab") / lab.prefix
    free = env.free_bytes(workdir)
    if not lab.cow and lab.pool_bytes > free:
        raise PlanError(f"{source}: lab.pool_size {lab.pool_size} does not fit the {free // 1024**2} MiB free "
                        f"under {workdir}; lower lab.pool_size or free space there")
    names = _interface_names(lab)
    bad = [x for x in names if len(x) > IFNAME_MAX or not x.replace("-", "").isalnum()]
    if bad:
        raise PlanError(f"{source}: lab.prefix {lab.prefix!r}: interface name {bad[0]!r} would exceed "
                        f"{IFNAME_MAX} characters or use unsafe characters; use a shorter prefix")


def _interface_names(lab) -> list[str]:
    try:
        from ..lab.names import Names
    except ImportError:  # no lab package in this build: the prefix rule in the model still holds
        return []
    names = Names(lab)
    out = [names.bridge, *names.namespaces()]
    for link in names.links():
        out += [link.near.ifname, link.switch.ifname]
    return out


def _regions(plan: Plan, source: str) -> None:
    """Every stream's share of its target holds at least one block of the largest size."""
    from ..engine.jobfile import region

    for c in plan.configurations:
        t = plan.target_of(c)
        size = t.size or plan.method.data_size
        if t.url.startswith("lab:") and plan.lab is not None:
            size = min(plan.lab.export_bytes, t.size or plan.lab.export_bytes)
        checks = [(w, lp) for w in plan.workloads for lp in plan.load_points]
        init = plan.method.initialise
        if init is not None and init.workload in BUILTIN_WORKLOADS:
            checks.append((BUILTIN_WORKLOADS[init.workload], LoadPoint(streams=init.streams)))
        for w, lp in checks:
            cell = Cell(c, w, lp, 0, 1)
            try:
                region(size, cell.streams, w)
            except ValueError:
                raise PlanError(f"{source}: configuration {c.name!r}, workload {w.name!r}: {size} bytes of target "
                                f"shared by {cell.streams} streams leave less than one {max(w.sizes())}-byte "
                                "block each; raise the target's size (or method.data_size) or lower streams"
                                ) from None

