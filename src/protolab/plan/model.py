"""The plan model (pydantic): targets, configurations, load points, method and the plan (workloads: plan.workload).

Configuration is data: the plan file is parsed once into these frozen models and
passed down; nothing else reads the file.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from . import safety
from .attach import ATTACH_PREFIX, Attach, NfsMount, attach_url
from .coordinates import load_label
from .drop_caches import DropCachesField
from .faults import Fault, FaultAxis, check_fault_names
from .heatmap_option import WithHeatmap
from .hosts import LoadHost  # noqa: F401  (a plan's [[hosts]]; re-exported)
from .initiator_timeouts import WithIscsiTimeouts
from .longrun import Interval, Slo, Stage, plan_seconds_per_cell
from .rate_ladder import Capacity
from .repeats import AdaptiveRepeats, parse_repeats, repeat_bounds
from .seed import SeedFinding, check_seed_findings
from .servers import check_server, kernel_path
from .stages import Fill, normalise_stages
from .sweep import Sweep
from .target_grammar import is_lab_target, protocol_named
from .units import format_duration, parse_duration, parse_size
from .workload import MAX_DATA, MAX_DURATION_S, MAX_HOSTS, MAX_OIO, MAX_STREAMS, Description, Workload, _Model


class TargetSpec(_Model):
    """Where the I/O goes: a local file, directory or block device, a URL, or a lab export."""

    url: str = Field(
        default="", description="path, iscsi://HOST[:PORT]/IQN/LUN, nfs://HOST/EXPORT, nbd://HOST[:PORT], or "
        "lab:PROTOCOL; with attach, leave it out (attach:PROTOCOL: the device is found once attached)",
    )
    attach: Attach | None = Field(
        default=None, description="attach on every host that uses it: { iscsi = {…} }, { nfs = {…} } or "
        "{ nvme-tcp = {…} } (plan.attach)")
    allow_overwrite: bool = Field(
        default=False, description="allow writing to a target that already holds data"
    )
    size: int | None = Field(default=None, description="bytes of the target to use; default: method.data_size")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if safety.has_control(v) or len(v) > 4096:
            raise ValueError("url holds a control character or is too long; write one path or URL")
        return v

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> int | None:
        if v is None:
            return None
        n = parse_size(v)
        if n < 1024**2:
            raise ValueError(f"size must be at least 1M (got {v!r})")
        return n

    @model_validator(mode="after")
    def _url_or_attach(self) -> "TargetSpec":
        if self.attach is not None:
            if self.url and self.url != attach_url(self.attach):
                raise ValueError("give url or attach, not both: with attach the device is found on each host "
                                 "once attached")
            object.__setattr__(self, "url", attach_url(self.attach))
        elif not self.url:
            raise ValueError("give url (a path, a URL or lab:PROTOCOL) or attach = { iscsi | nfs | nvme-tcp = {…} }")
        elif self.url.startswith(ATTACH_PREFIX):
            raise ValueError(f"url {self.url!r} stands for a target attached on the hosts; write attach = "
                             "{ iscsi | nfs | nvme-tcp = {…} } in the target's table instead")
        return self


class Configuration(WithIscsiTimeouts):
    """A named combination of a target and settings; one configuration is the baseline."""

    name: str = Field(description=safety.NAME_RULE)
    description: Description = ""
    target: str | TargetSpec
    ioengine: str | None = Field(
        default=None, description="fio engine for local targets (io_uring, libaio, psync); URLs pick their own"
    )
    direct: bool = Field(default=True, description="O_DIRECT for local targets")
    link: dict[str, Any] = Field(default_factory=dict, description="lab link overrides, e.g. {mtu = 9000}")
    fio: dict[str, str] = Field(
        default_factory=dict,
        description="fio options that tune how the engine submits and completes I/O (an allow-list, see docs/plan.md)",
    )
    controller: Literal["virtio-blk", "virtio-scsi", "lsi", "megasas", "pvscsi"] | None = Field(
        default=None,
        description="the VMs' virtual disk controller ([hypervisor] plans; default hypervisor.controller)")
    server: str | None = Field(
        default=None, description="the lab's server for the target's protocol (plan.servers: tgt or lio for "
        "lab:iscsi, ganesha or knfsd for lab:nfs); default the protocol's own; a kernel's (lio, nvmet, knfsd) runs "
        "in the storage server guest")
    sessions: int | None = Field(default=None, ge=1, le=16, description="iSCSI sessions each load guest's kernel "
                                 "logs in (server = \"lio\")")
    nfs: NfsMount | None = Field(default=None, description="how each load guest's kernel mounts knfsd's export "
                                 "(server = \"knfsd\"): { version, nconnect, rsize, wsize }; default NFS 4.1")
    path_policy: Literal["fixed", "round-robin"] = Field(
        default="fixed", description="lab multipath: every stream on the preferred path, or streams spread over paths")
    cpu_limit: dict[Literal["servers", "loadgen", "hypervisors"], Annotated[float, Field(gt=0, le=1024)]] = Field(
        default_factory=dict, description="cap a role's CPU in cores for this configuration's cells (lab or VMs), "
        "e.g. { servers = 0.5 }: a weaker array controller or load host")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        return safety.check_name(v, "configuration")

    @field_validator("target", mode="before")
    @classmethod
    def _target(cls, v: Any) -> Any:
        if isinstance(v, str) and (safety.has_control(v) or len(v) > 4096 or not v.strip()):
            raise ValueError("target is empty, holds a control character or is too long; "
                             "write a [targets] name, a path or a URL")
        return v

    @field_validator("ioengine", mode="before")
    @classmethod
    def _engine(cls, v: Any) -> Any:
        return None if v is None else safety.check_engine(v)

    @field_validator("fio", mode="before")
    @classmethod
    def _fio(cls, v: Any) -> dict[str, str]:
        return safety.check_fio_options(v)

    @field_validator("link", mode="before")
    @classmethod
    def _link(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("link must be a table of link settings, e.g. link = { mtu = 9000 }")
        return v


class LoadPoint(_Model):
    """One step of the load ladder: hosts × load streams per host × outstanding I/Os per stream."""

    hosts: int = Field(default=1, ge=1, le=MAX_HOSTS)
    streams: int = Field(ge=1, le=MAX_STREAMS, description="load streams per host (the studies' VMs)")
    oio: int | None = Field(default=None, ge=1, le=MAX_OIO,
                            description="outstanding I/Os per stream; default: the workload's")

    def oio_for(self, workload: Workload) -> int:
        """Outstanding I/Os per stream at this point for ``workload``."""
        return self.oio if self.oio is not None else workload.oio

    def label(self, workload: Workload) -> str:
        """'1×4×4=16' at ``workload``'s OIO per stream (plan.coordinates.load_label)."""
        return load_label(self.hosts, self.streams, self.oio_for(workload))


class Initialise(_Model):
    """The access spec that initialises the data once per study (TR-3808: 5 min of 8 KiB random reads)."""

    workload: str = Field(default="tr3808-init", description="a built-in workload name")
    duration: float = Field(default=60.0, gt=0, le=MAX_DURATION_S, description="seconds")
    streams: int = Field(default=4, ge=1, le=MAX_STREAMS)

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


class Method(WithHeatmap):
    """How each cell is measured."""

    warmup: float = Field(
        default=5.0, ge=0, le=MAX_DURATION_S,
        description="seconds of warm-up before each measured window (the maximum when warmup_until_steady)",
    )
    warmup_until_steady: bool = Field(
        default=False, description="end the warm-up as soon as IOPS is steady by the SNIA PTS rule"
    )
    steady_window: int = Field(default=5, ge=3, le=60, description="intervals (of method.interval seconds) in the "
                               "steady-state window")
    restore: bool = Field(default=False, description="restore the pool snapshot before every cell (lab)")
    initialise: Initialise | None = Field(default=None, description="initialise the data once, then snapshot")
    duration: float = Field(default=30.0, ge=1, le=MAX_DURATION_S, description="seconds of the measured window")
    repeats: Annotated[int, Field(ge=1, le=100)] | AdaptiveRepeats = Field(
        default=5,
        description="measured windows per cell, or { min, max, until_ci_pct, until_agree_pct } (plan.repeats)",
    )
    data_size: int = Field(default=256 * 1024**2, description="bytes of data per target, shared by the streams")
    prepare: bool = Field(default=True, description="fill each target's data once before the first cell")
    cpu_priority: Literal["high", "normal"] = Field(
        default="normal", description="high: the lab's servers, load generators and hypervisors (and protolab) run "
        "at the highest CPU weight, so other work on the machine yields to them (telemetry.priority); normal: as any")

    interval: Interval = Field(default=1, description="seconds per series interval (fio's status interval): "
                               "the warm-up's steps, the steady window's samples and series.csv's rows")
    slo: Slo | None = Field(default=None, description="a latency objective per interval, e.g. { p95 = \"20ms\" }")
    drop_caches: DropCachesField = Field(default=None, description="drop the page caches before each cell: true, or "
                                         "{ hosts, servers = [{ name, ssh }] } (plan.drop_caches)")

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats(cls, v: Any) -> Any:
        return parse_repeats(v)

    @field_validator("warmup", "duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)

    @field_validator("data_size", mode="before")
    @classmethod
    def _data_size(cls, v: Any) -> int:
        n = parse_size(v)
        if n < 1024**2:
            raise ValueError(f"data_size must be at least 1M (got {v!r})")
        if n > MAX_DATA:
            raise ValueError(f"data_size must be at most 1P (got {v!r})")
        return n

    @property
    def min_repeats(self) -> int:
        """Repeats every cell gets."""
        return repeat_bounds(self.repeats)[0]

    @property
    def max_repeats(self) -> int:
        """Repeats no cell goes beyond."""
        return repeat_bounds(self.repeats)[1]

    def summary(self) -> str:
        """One line: 'warm-up 5s, measured 30s, 3 repeats'."""
        warm = (f"warm-up until steady (SNIA, {self.steady_window * self.interval}s window, at most "
                f"{format_duration(self.warmup)})"
                if self.warmup_until_steady else f"warm-up {format_duration(self.warmup)}")
        extra = ", restore before each cell" if self.restore else ""
        extra += f", series every {format_duration(self.interval)}" if self.interval != 1 else ""
        extra += f", objective {self.slo.summary()}" if self.slo is not None else ""
        extra += ", the lab's roles at the highest CPU weight" if self.cpu_priority == "high" else ""
        extra += f", {self.drop_caches.summary()}" if self.drop_caches is not None else ""
        extra += ", a capture at both ends of the link per cell (breakdown)" if self.breakdown else ""
        return (f"{warm}, measured {format_duration(self.duration)}, "
                f"{_repeats_text(self.repeats)}{extra}")


def _repeats_text(r: int | AdaptiveRepeats) -> str:
    return r.summary() if isinstance(r, AdaptiveRepeats) else f"{r} repeat{'s' if r != 1 else ''}"


MAX_CELLS = 100_000  # ≥ 28 hours of measurement at 1 s per cell: beyond it a plan is a mistake


class Plan(_Model):
    """A whole study: configurations × workloads × load points × repeats, and the baseline."""

    name: str = Field(description=safety.NAME_RULE)
    description: Description = ""
    seed: Description = Field("", description="the study in ../shared/STUDIES.md this plan reproduces (built-ins)")
    seed_findings: list[SeedFinding] = Field(default_factory=list, max_length=50,
                                             description="the seed's findings set beside the measurement (plan.seed)")
    baseline: str
    workloads: list[Workload] = Field(min_length=1)
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    configurations: list[Configuration] = Field(min_length=1)
    load_points: list[LoadPoint] = Field(min_length=1)
    method: Method = Method()
    stage: Stage | None = Field(default=None, description="[stage.fill] fill levels, [stage.age] aging "
                                "(plan.stages, plan.longrun)")
    sweep: Sweep | None = Field(default=None, description="[sweep] service_time, link_rate (plan.sweep)")
    capacity: Capacity | None = Field(default=None,
                                      description="[capacity] a rate ladder and its SLO (plan.rate_ladder)")
    faults: list[Fault] = Field(default_factory=list, max_length=20, description="[[faults]] during the measured "
                                "window: each a value of the fault coordinate, beside \"none\" (plan.faults)")
    hosts: list[LoadHost] = Field(default_factory=list, description="load hosts (real infrastructure)")
    lab: Any = None  # protolab.plan.topology.LabSpec when the study uses the embedded lab
    hypervisor: Any = None  # protolab.plan.hypervisor.Hypervisor: VMs as load hosts (needs the lab)
    scale: str | None = Field(None, description="the [scale.NAME] the plan was loaded at (set by the loader)")

    @model_validator(mode="before")
    @classmethod
    def _one_stage_form(cls, data: Any) -> Any:
        return normalise_stages(data)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # without a sweep, a ladder as before they existed: no format bump
        return {k: v for k, v in handler(self).items()
                if k not in ("sweep", "capacity", "faults") or getattr(self, k)}

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        return safety.check_name(v, "plan")

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for key in v:
                safety.check_name(key, "target")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Plan":
        cells = (len(self.configurations) * len(self.workloads) * len(self.load_points) * self.method.max_repeats
                 * (len(self.fill.levels) if self.fill is not None else 1) * self.age_steps
                 * (self.sweep.values if self.sweep is not None else 1)
                 * (len(self.capacity.ladder) + self.capacity.refine if self.capacity is not None else 1)
                 * (len(self.faults) + 1))
        if cells > MAX_CELLS:  # expanding it would exhaust memory long before the study could ever run
            raise ValueError(f"the plan expands to {cells} cells (configurations × workloads × load points × "
                             f"repeats × steps × swept values); at most {MAX_CELLS} are allowed: split it in several")
        names = [c.name for c in self.configurations]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"configuration names must be unique; repeated: {', '.join(sorted(dup))}")
        wnames = [w.name for w in self.workloads]
        wdup = {n for n in wnames if wnames.count(n) > 1}
        if wdup:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(sorted(wdup))}")
        hnames = [h.name for h in self.hosts]
        if len(set(hnames)) != len(hnames):
            raise ValueError("host names must be unique")
        most = max(lp.hosts for lp in self.load_points)
        if self.hosts and most > len(self.hosts):
            raise ValueError(f"a load point asks for {most} hosts but [[hosts]] names {len(self.hosts)}; "
                             "add hosts or lower the load point's hosts")
        check_seed_findings(self.seed_findings, wnames, names)
        check_fault_names(self.faults)
        age = self.stage.age if self.stage is not None else None
        if age is not None and age.at_fill is not None and (self.fill is None or age.at_fill not in self.fill.levels):
            raise ValueError(f"stage.age.at_fill = {age.at_fill}: not one of stage.fill's levels; add it to "
                             "[stage.fill] levels or remove at_fill")
        if self.age_steps > 1 and isinstance(self.method.repeats, AdaptiveRepeats):
            raise ValueError("stage.age with adaptive repeats: an aging sequence is one long measurement; "
                             "give method.repeats a number")
        capped = [c.name for c in self.configurations if c.cpu_limit]
        if capped and not self.uses_lab() and self.hypervisor is None:
            raise ValueError(f"configurations {', '.join(capped)}: cpu_limit caps the CPU of the embedded lab's "
                             "roles; use lab: targets or remove cpu_limit")
        for c in self.configurations:
            url = self.target_of(c).url
            try:
                check_server(protocol_named(url) if is_lab_target(url) else None, c.server, c.sessions, c.nfs,
                             c.iscsi)
            except ValueError as e:
                raise ValueError(f"configuration {c.name!r}: {e}") from None
        kernel = {c.name: url for c in self.configurations if kernel_path(self.target_of(c).url, c.server)}
        if kernel and self.hypervisor is None:
            raise ValueError(f"configurations {', '.join(kernel)}: {', '.join(sorted(set(kernel.values())))} is "
                             "served and reached by the kernels of the lab's guests; add a [hypervisor] table")
        if self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a configuration; choose one of: {', '.join(names)}")
        return self

    def configuration(self, name: str) -> Configuration:
        return next(c for c in self.configurations if c.name == name)  # the configuration called ``name``

    def target_of(self, config: Configuration) -> TargetSpec:
        """The configuration's target, resolving a name from [targets]."""
        if isinstance(config.target, TargetSpec):
            return config.target
        return self.targets[config.target] if config.target in self.targets else TargetSpec(url=config.target)

    def method_summary(self) -> str:
        """The method in words, with the stages that change the data between cells."""
        return (self.method.summary() + (f"; {self.fill.summary()}" if self.fill is not None else "")
                + (f"; swept: {self.sweep.summary()}" if self.sweep is not None else "")
                + (f"; {self.capacity.summary()}" if self.capacity is not None else "")
                + "".join(f"; fault {f.summary()}" for f in self.faults))

    @property
    def fill(self) -> Fill | None:
        """The fill-level stage ([stage.fill]), if any."""
        return self.stage.fill if self.stage is not None else None

    @property
    def stages(self) -> list:
        """The plan's stages, outermost first (plan.stages): the swept values (plan.sweep), the fill, the aging."""
        age = self.stage.age if self.stage is not None else None
        return [*(self.sweep.axes() if self.sweep is not None else []),
                *([self.capacity.axis()] if self.capacity is not None else []),
                *([FaultAxis(tuple(self.faults))] if self.faults else []), *(s for s in (self.fill, age) if s)]

    @property
    def age_steps(self) -> int:
        """Cells per aging sequence (1 without [stage.age])."""
        return self.stage.age.steps if self.stage is not None and self.stage.age is not None else 1

    @property
    def seconds_per_cell(self) -> float:
        return plan_seconds_per_cell(self)  # warm-up and window per cell, on average (see plan.longrun)

    def uses_lab(self) -> bool:
        """True when any configuration targets a lab export."""
        return any(is_lab_target(self.target_of(c).url) for c in self.configurations)

