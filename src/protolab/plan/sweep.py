"""`[sweep]`: the array's service time and the links' rate as coordinates one run measures at several values.

    [sweep]
    service_time = ["0us", "150us", "500us", "1.5ms", "5.5ms"]   # the device model's mean service time
    link_rate = ["100mbit", "1GbE"]                              # every lab link's rate (all configurations')
    crossover_band = 9       # ± % of the baseline's IOPS the report's crossover tests (analysis.crossover)

Each list is one dimension of the cell (`service_time` in whole µs, `link_rate` in whole Mbit/s: a record's
coordinate, a cells.csv column, part of the cell's id for resume), an outer loop of the expansion like a fill
level: every cell at one value, configurations interleaved as always, then the next value. Nothing is
re-provisioned between values: the lab hands the pool's device model its new service time through the daemon's
control channel (lab.device) and re-calibrates the stack's overhead once per value; a link rate is set as a
configuration's `link = { rate }` is. A swept service time replaces the mean of `[lab.storage]` (its spread
scaled with it, parallelism, cache and cap kept), so a sweep needs the lab and a device model there; `0us` is
the daemon answering at once: the fastest array this lab has (FUSE and the loop device still in the path).
A swept link rate replaces every configuration's own rate.

**The chosen point.** A plan's own `[lab.storage]` service time and `[lab.link]` rate are the values its arithmetic
chose (a seed's array, a seed's link ratio): `chosen` gives them for the swept coordinates. The plan's seed claims
are judged there only (analysis.claims); the other swept values are the crossover's, which shows how far a verdict
reaches. So a plan with seed claims must sweep its chosen value too (`check_sweep` refuses it otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field, field_validator

from .coordinates import UNITS, value_text
from .storage import StorageSpec, parse_time_us
from .topology import parse_rate
from .workload import _Model

MAX_VALUES = 20  # a sweep wider than this is a study of its own


def _ascending(name: str, values: list[int], written: list[Any]) -> None:
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"{name} values must ascend without repeats (got {written}); sort them")


class Sweep(_Model):
    """`[sweep]`: the values of each swept coordinate (see the module's text)."""

    service_time: list[str] | None = Field(default=None, description="the device model's mean service time per "
                                           "cell, ascending, e.g. [\"0us\", \"150us\", \"5.5ms\"]")
    link_rate: list[str] | None = Field(default=None, description="every lab link's rate per cell, ascending, "
                                        "e.g. [\"100mbit\", \"1GbE\"]")

    crossover_band: float | None = Field(default=None, gt=0, lt=100, description="the crossover's band, ± % of the "
                                         "baseline's IOPS (default: the plan's first seed claim on IOPS, else 9)")

    @field_validator("service_time", mode="before")
    @classmethod
    def _service(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, list) or not 1 <= len(v) <= MAX_VALUES:
            raise ValueError(f"service_time must be a list of 1 to {MAX_VALUES} times, e.g. [\"0us\", \"150us\"]")
        us = []
        for x in v:
            t = parse_time_us(x, "service_time")
            if t != int(t) or t > 10_000_000:
                raise ValueError(f"each service_time must be a whole number of µs up to 10s (got {x!r})")
            us.append(int(t))
        _ascending("service_time", us, v)
        return v

    @field_validator("link_rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, list) or not 1 <= len(v) <= MAX_VALUES:
            raise ValueError(f"link_rate must be a list of 1 to {MAX_VALUES} rates, e.g. [\"100mbit\", \"1GbE\"]")
        mbit = []
        for x in v:
            if not isinstance(x, str):
                raise ValueError(f"each link_rate must be a rate like '100mbit' or '1GbE' (got {x!r})")
            bps = parse_rate(x)
            if bps % 1_000_000 or bps > 400_000_000_000:
                raise ValueError(f"each link_rate must be a whole number of Mbit/s up to 400Gbit (got {x!r})")
            mbit.append(bps // 1_000_000)
        _ascending("link_rate", mbit, v)
        return v

    def axes(self) -> list["Axis"]:
        """Its swept coordinates, outermost first: the service time, then the link rate."""
        out = []
        if self.service_time is not None:
            out.append(Axis("service_time", tuple(int(parse_time_us(x, "service_time")) for x in self.service_time)))
        if self.link_rate is not None:
            out.append(Axis("link_rate", tuple(parse_rate(x) // 1_000_000 for x in self.link_rate)))
        return out

    @property
    def values(self) -> int:
        """Swept points in all: the product of each coordinate's number of values."""
        n = 1
        for a in self.axes():
            n *= len(a.values)
        return n

    def summary(self) -> str:
        """'service time 0, 150, 500 µs; link rate 100, 1000 Mbit/s'."""
        return "; ".join(f"{a.name.replace('_', ' ')} {', '.join(map(str, a.values))} {UNITS[a.name]}"
                         for a in self.axes())


#: The swept coordinates (their units: plan.coordinates.UNITS) and their part of a cell's id.
KEY = {"service_time": "st", "link_rate": "lr"}


@dataclass(frozen=True)
class Axis:
    """One swept coordinate as a stage kind of the expansion (plan.stages.StageKind): its steps are cells of
    their own, nothing done to the data before them."""

    name: str
    values: tuple[int, ...]
    sequence: ClassVar[bool] = False

    @property
    def dimensions(self) -> tuple[str, ...]:
        return (self.name,)

    def step_list(self) -> list["SweepStep"]:
        return [SweepStep(self.name, v) for v in self.values]

    def applies(self, outer: Any) -> bool:
        return True


class UntouchedStep:
    """A step (plan.stages.Step) that is its own cell with the data untouched: a swept value, an offered rate."""

    in_key: ClassVar[bool] = True
    changes_data: ClassVar[bool] = False
    continues: ClassVar[bool] = False
    seconds: ClassVar[float | None] = None

    def region(self, size: int) -> int:
        return size


@dataclass(frozen=True)
class SweepStep(UntouchedStep):
    """One value of a swept coordinate (plan.stages.Step): its own cell, the data untouched."""

    dimension: str
    value: int

    @property
    def key(self) -> str:
        return f"{KEY[self.dimension]}{self.value}"

    def coords(self) -> dict[str, str | int]:
        return {self.dimension: self.value}



def sweep_values(coords: dict[str, Any]) -> dict[str, int]:
    """The swept coordinates among a cell's or record's ``coords``."""
    return {k: int(v) for k, v in coords.items() if k in KEY}


def at_service_time(spec: StorageSpec, service_us: int) -> StorageSpec:
    """The device model ``spec`` with its mean service time swept to ``service_us``: an explicit model (cells.csv's
    `device_model` then names every figure: '500us ×64, no throughput cap, no cache'), its spread scaled with the
    mean (the same shape of distribution), parallelism, cap, cache and write-back kept."""
    spread = spec.spread_us * service_us / spec.service_us if spec.service_us else 0.0
    return StorageSpec(service_time=f"{service_us}us", spread=f"{spread:.3f}us" if spread else None,
                       parallelism=spec.servers, throughput=spec._get("throughput"), cache=spec._get("cache"),
                       write_time=spec._get("write_time"))


def device_model_at(spec: StorageSpec, coords: dict[str, Any]) -> StorageSpec:
    """The device model a record was measured over: ``spec``, at its swept service time if it has one."""
    us = coords.get("service_time")
    return spec if us is None or spec.is_ram else at_service_time(spec, int(us))


def _lab_of(plan: Any) -> Any:
    from .topology import LabSpec

    lab = getattr(plan, "lab", None)
    return LabSpec.model_validate(lab) if isinstance(lab, dict) else lab  # a manifest's plan keeps [lab] as data


def chosen(plan: Any) -> dict[str, int]:
    """The plan's own value of each swept coordinate (see the module's text): its `[lab.storage]` mean service time
    in whole µs, its `[lab.link]` rate in whole Mbit/s; a coordinate without one (an unshaped link) is left out, and
    a plan without a sweep has none."""
    sweep, lab = getattr(plan, "sweep", None), _lab_of(plan)
    if sweep is None or lab is None:
        return {}
    out = {}
    for a in sweep.axes():
        if a.name == "service_time":
            out[a.name] = round(lab.device.service_us)
        elif a.name == "link_rate" and lab.link.rate_bps is not None:
            out[a.name] = lab.link.rate_bps // 1_000_000
    return out


def chosen_words(plan: Any) -> str:
    """Where the plan's seed claims are judged, in words: 'service time 5.5 ms ([lab.storage] hdd-array)'; ''
    without a sweep."""
    lab, out = _lab_of(plan), []
    for name, v in chosen(plan).items():
        whose = (f"[lab.storage] {lab.device.name}" if name == "service_time" else f"[lab.link] rate {lab.link.rate}")
        out.append(f"{name.replace('_', ' ')} {value_text(name, v)} ({whose})")
    return ", ".join(out)


def _claims(plan: Any) -> bool:
    return any(f.claims for f in getattr(plan, "seed_findings", None) or [])


def check_sweep(plan: Any) -> str | None:
    """Why ``plan``'s sweep cannot run (one line), or None: a swept service time needs the lab's device model, a
    swept link rate the lab's links."""
    sweep = getattr(plan, "sweep", None)
    if sweep is None:
        return None
    if not plan.uses_lab() or plan.lab is None:
        return "sweep: a swept service time or link rate is the embedded lab's; use lab: targets or remove [sweep]"
    if plan.hypervisor is not None:
        return "sweep: not with [hypervisor] yet (its guests' links and disks are set once); remove [sweep]"
    if plan.stage is not None:  # a fill level written under one value would be written again under the next
        return "sweep: not with [stage.fill] or [stage.age] yet (their data is not restored between steps); split it"
    if sweep.service_time is not None and plan.lab.device.is_ram:
        return ("sweep.service_time: the pool has no device model to set; give [lab.storage] one (e.g. "
                "service_time = \"150us\", parallelism = 64), whose service time the sweep replaces")
    if _claims(plan):  # the seed's claims are judged at the plan's own point: it must be measured
        own = chosen(plan)
        for a in sweep.axes():
            unit = "us" if a.name == "service_time" else "mbit"
            if a.name not in own:
                return (f"sweep.{a.name}: the seed's claims are judged at the plan's own link rate, and [lab.link] "
                        "has none; give [lab.link] a rate among the sweep's values")
            if own[a.name] not in a.values:
                whose = "[lab.storage] service time" if a.name == "service_time" else "[lab.link] rate"
                return (f"sweep.{a.name}: the seed's claims are judged at the plan's {whose}, {own[a.name]} "
                        f"{UNITS[a.name]}, which the sweep does not measure; add \"{own[a.name]}{unit}\" to "
                        f"sweep.{a.name}")
    return None
