"""The plan model (pydantic): workloads, targets, configurations, load points, method.

Configuration is data: the plan file is parsed once into these frozen models and
passed down; nothing else reads the file.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..names import NAME_RE
from .safety import LOCAL_ENGINES, check_fio_options, check_ssh_options
from .units import format_duration, format_size, parse_duration, parse_size

SCHEMA_VERSION = 1
_NAME = re.compile(NAME_RE)
MAX_OIO = 32768  # io_uring's largest queue (IORING_MAX_ENTRIES); fio's iodepth cannot usefully exceed it
MAX_STREAMS = 4096  # fio's REAL_MAX_JOBS: jobs one fio process can run


class _Model(BaseModel):
    # strict: no "3" → 3, true → 1 or "yes" → true; sizes and durations parse their own strings
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _no_control(v: str, what: str) -> str:
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in v):
        raise ValueError(f"{what} must not contain control characters (got {v!r})")
    return v


class Workload(_Model):
    """An access spec, as Iometer and the studies define one."""

    name: str = Field(pattern=NAME_RE, description="1-64 letters, digits, '.', '_', '-'; not starting with '.'")
    description: str = ""
    block_size: int | dict[int, float] = Field(
        description="bytes, or a mix {size: weight}; written '4k' or {'4k' = 75, '64k' = 25}"
    )
    read_pct: float = Field(ge=0, le=100, description="share of I/Os that read, in %")
    random_pct: float = Field(ge=0, le=100, description="share of I/Os at random offsets, in %")
    oio: int = Field(default=4, ge=1, le=MAX_OIO, description="outstanding I/Os per load stream")
    rate_iops: int | None = Field(default=None, gt=0, le=2**32, description="optional cap per load stream")

    @field_validator("block_size", mode="before")
    @classmethod
    def _block_size(cls, v: Any) -> int | dict[int, float]:
        if isinstance(v, dict):
            if not v:
                raise ValueError("a block-size mix needs at least one size")
            mix: dict[int, float] = {}
            for size, weight in v.items():
                if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight <= 0:
                    raise ValueError(f"the weight of {size!r} must be a positive number")
                mix[_block(size)] = float(weight)
            return next(iter(mix)) if len(mix) == 1 else mix
        return _block(v)

    def sizes(self) -> dict[int, float]:
        """Block sizes with weights summing to 1."""
        if isinstance(self.block_size, int):
            return {self.block_size: 1.0}
        total = sum(self.block_size.values())
        return {s: w / total for s, w in self.block_size.items()}

    def mean_block_size(self) -> float:
        """The expected bytes per I/O."""
        return sum(s * w for s, w in self.sizes().items())

    def summary(self) -> str:
        """One line: '4k, 75 % read, 100 % random, 4 OIO'."""
        if isinstance(self.block_size, int):
            bs = format_size(self.block_size)
        else:
            bs = "/".join(f"{format_size(s)}:{w:g}" for s, w in self.block_size.items())
        cap = f", ≤{self.rate_iops} IOPS/stream" if self.rate_iops else ""
        return f"{bs}, {self.read_pct:g} % read, {self.random_pct:g} % random, {self.oio} OIO{cap}"


def _block(v: Any) -> int:
    n = parse_size(v)
    if n < 512 or n % 512:
        raise ValueError(f"block size must be a positive multiple of 512 bytes (got {v!r})")
    return n


class TargetSpec(_Model):
    """Where the I/O goes: a local file, directory or block device, a URL, or a lab export."""

    url: str = Field(
        min_length=1,
        description="path, iscsi://HOST[:PORT]/IQN/LUN, nfs://HOST/EXPORT, nbd://HOST[:PORT], or lab:PROTOCOL",
    )
    allow_overwrite: bool = Field(
        default=False, description="allow writing to a target that already holds data"
    )
    size: int | None = Field(default=None, description="bytes of the target to use; default: method.data_size")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _no_control(v, "url")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> int | None:
        if v is None:
            return None
        n = parse_size(v)
        if n < 1024**2:
            raise ValueError(f"size must be at least 1M (got {v!r})")
        return n


class Configuration(_Model):
    """A named combination of a target and settings; one configuration is the baseline."""

    name: str = Field(pattern=NAME_RE)
    description: str = ""
    target: str | TargetSpec
    ioengine: str | None = Field(
        default=None, description="fio engine for local targets (io_uring, libaio, psync); URLs pick their own"
    )

    @field_validator("target")
    @classmethod
    def _target(cls, v: Any) -> Any:
        return _no_control(v, "target") if isinstance(v, str) else v

    @field_validator("ioengine")
    @classmethod
    def _ioengine(cls, v: str | None) -> str | None:
        if v is not None and v not in LOCAL_ENGINES:
            raise ValueError(f"ioengine {v!r} is not allowed; choose one of: {', '.join(LOCAL_ENGINES)}")
        return v

    @field_validator("fio", mode="before")
    @classmethod
    def _fio(cls, v: Any) -> Any:
        return check_fio_options(v)

    direct: bool = Field(default=True, description="O_DIRECT for local targets")
    link: dict[str, Any] = Field(default_factory=dict, description="lab link overrides, e.g. {mtu = 9000}")
    fio: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="extra fio job options, passed as given"
    )
    path_policy: Literal["fixed", "round-robin"] = Field(
        default="fixed", description="lab multipath: every stream on the preferred path, or streams spread over paths"
    )


class LoadPoint(_Model):
    """One step of the load ladder: hosts × load streams per host × outstanding I/Os per stream."""

    hosts: int = Field(default=1, ge=1, le=200)
    streams: int = Field(ge=1, le=MAX_STREAMS, description="load streams per host (the studies' VMs)")
    oio: int | None = Field(default=None, ge=1, le=MAX_OIO,
                           description="outstanding I/Os per stream; default: the workload's")

    def oio_for(self, workload: Workload) -> int:
        """Outstanding I/Os per stream at this point for ``workload``."""
        return self.oio if self.oio is not None else workload.oio

    def label(self, workload: Workload) -> str:
        """'1×4×4 (16 OIO)': hosts × streams × OIO per stream."""
        o = self.oio_for(workload)
        return f"{self.hosts}×{self.streams}×{o} ({self.hosts * self.streams * o} OIO)"


class Initialise(_Model):
    """The access spec that initialises the data once per study (TR-3808: 5 min of 8 KiB random reads)."""

    workload: str = Field(default="tr3808-init", description="a built-in workload name")
    duration: float = Field(default=60.0, gt=0, description="seconds")
    streams: int = Field(default=4, ge=1, le=MAX_STREAMS)

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


class LoadHost(_Model):
    """A load host of real infrastructure: where one fio server runs."""

    name: str = Field(pattern=NAME_RE)
    agent: str = Field(
        default="local",
        description="'local', 'ssh://[USER@]HOST[:SSH_PORT]' (fio server started over ssh) or 'fio://HOST[:PORT]' (already running)",
    )
    fio: str = Field(default="fio", description="fio's path on the remote host (ssh agents)")
    fio_port: int = Field(default=8765, ge=1, le=65535, description="port of the fio server started over ssh")
    ssh_options: list[str] = Field(
        default_factory=list, description="extra ssh arguments, e.g. ['-F', '~/.ssh/lab_config'] or ['-i', KEY]"
    )

    @field_validator("agent")
    @classmethod
    def _agent(cls, v: str) -> str:
        if v != "local" and not _AGENT.match(v):
            raise ValueError(f"agent must be 'local', 'ssh://[USER@]HOST[:PORT]' or 'fio://HOST[:PORT]' "
                             f"with a plain host name (got {v!r})")
        port = v.rpartition(":")[2]
        if v != "local" and port.isdigit() and not 1 <= int(port) <= 65535:
            raise ValueError(f"agent {v!r}: port must be 1 to 65535")
        return v

    @field_validator("fio")
    @classmethod
    def _fio_path(cls, v: str) -> str:
        # the remote fio is started through ssh's remote shell: a plain path, nothing a shell interprets
        if not _REMOTE_PATH.match(v):
            raise ValueError(f"fio must be a plain path like /usr/local/bin/fio (got {v!r})")
        return v

    @field_validator("ssh_options", mode="before")
    @classmethod
    def _ssh(cls, v: Any) -> Any:
        return check_ssh_options(v)


_AGENT = re.compile(r"^(ssh://([A-Za-z0-9_][A-Za-z0-9._-]{0,31}@)?|fio://)[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:\d{1,5})?$")
_REMOTE_PATH = re.compile(r"^[A-Za-z0-9_/][A-Za-z0-9._/+-]{0,255}$")


class Method(_Model):
    """How each cell is measured."""

    warmup: float = Field(
        default=5.0, ge=0,
        description="seconds of warm-up before each measured window (the maximum when warmup_until_steady)",
    )
    warmup_until_steady: bool = Field(
        default=False, description="end the warm-up as soon as IOPS is steady by the SNIA PTS rule"
    )
    steady_window: int = Field(default=5, ge=3, le=60, description="seconds in the steady-state window")
    restore: bool = Field(default=False, description="restore the pool snapshot before every cell (lab)")
    initialise: Initialise | None = Field(default=None, description="initialise the data once, then snapshot")
    duration: float = Field(default=30.0, gt=0, description="seconds of the measured window")
    repeats: int = Field(
        default=5, ge=1, le=100,
        description="measured windows per cell (Mann–Whitney needs ≥4 per side to ever call a difference)",
    )
    data_size: int = Field(default=256 * 1024**2, description="bytes of data per target, shared by the streams")

    @field_validator("duration")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v < 1:
            raise ValueError(f"duration must be at least 1s (got {v:g}s)")
        return v
    prepare: bool = Field(default=True, description="fill each target's data once before the first cell")

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
        return n

    def summary(self) -> str:
        """One line: 'warm-up 5s, measured 30s, 3 repeats'."""
        warm = (f"warm-up until steady (SNIA, {self.steady_window}s window, at most {format_duration(self.warmup)})"
                if self.warmup_until_steady else f"warm-up {format_duration(self.warmup)}")
        extra = ", restore before each cell" if self.restore else ""
        return (f"{warm}, measured {format_duration(self.duration)}, "
                f"{self.repeats} repeat{'s' if self.repeats != 1 else ''}{extra}")


class Plan(_Model):
    """A whole study: configurations × workloads × load points × repeats, and the baseline."""

    name: str = Field(pattern=NAME_RE)
    description: str = ""
    baseline: str
    workloads: list[Workload] = Field(min_length=1)
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    configurations: list[Configuration] = Field(min_length=1)
    load_points: list[LoadPoint] = Field(min_length=1)
    method: Method = Method()
    hosts: list[LoadHost] = Field(default_factory=list, description="load hosts (real infrastructure)")
    lab: Any = None  # protolab.plan.topology.LabSpec when the study uses the embedded lab

    @model_validator(mode="after")
    def _consistent(self) -> "Plan":
        names = [c.name for c in self.configurations]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"configuration names must be unique; repeated: {', '.join(sorted(dup))}")
        wnames = [w.name for w in self.workloads]
        wdup = {n for n in wnames if wnames.count(n) > 1}
        if wdup:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(sorted(wdup))}")
        bad = [n for n in self.targets if not _NAME.match(n)]
        if bad:
            raise ValueError(f"targets: name {bad[0]!r} is not allowed; use 1 to 64 letters, digits, '.', '_' "
                             "or '-', not starting with '.'")
        hnames = [h.name for h in self.hosts]
        if len(set(hnames)) != len(hnames):
            raise ValueError("host names must be unique")
        most = max(lp.hosts for lp in self.load_points)
        if self.hosts and most > len(self.hosts):
            raise ValueError(f"a load point asks for {most} hosts but [[hosts]] names {len(self.hosts)}; "
                             "add hosts or lower the load point's hosts")
        for c in self.configurations:
            t = c.target
            if isinstance(t, str) and t not in self.targets and "/" not in t and ":" not in t:
                import difflib

                close = difflib.get_close_matches(t, list(self.targets), n=1)
                hint = (f"did you mean {close[0]!r}?" if close else
                        f"name one of [targets] ({', '.join(self.targets) or 'none defined'})")
                raise ValueError(f"configuration {c.name!r}: target {t!r} is not a [targets] name, a URL or a "
                                 f"path containing '/'; {hint} (write ./{t} for a file here)")
        if self.baseline not in names:
            raise ValueError(
                f"baseline {self.baseline!r} is not a configuration; choose one of: {', '.join(names)}"
            )
        return self

    def configuration(self, name: str) -> Configuration:
        """The configuration called ``name``."""
        return next(c for c in self.configurations if c.name == name)

    def target_of(self, config: Configuration) -> TargetSpec:
        """The configuration's target, resolving a name from [targets]."""
        if isinstance(config.target, TargetSpec):
            return config.target
        if config.target in self.targets:
            return self.targets[config.target]
        return TargetSpec(url=config.target)

    def uses_lab(self) -> bool:
        """True when any configuration targets a lab export."""
        return any(self.target_of(c).url.startswith("lab:") for c in self.configurations)


