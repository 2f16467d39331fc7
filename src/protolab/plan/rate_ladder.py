"""`[capacity]`: an open-loop rate ladder — the offered IOPS as a coordinate — and the latency objective it is read
against: where latency leaves its floor (the knee) and the highest offered rate that meets the objective
(analysis.capacity), as vdbench's `iorate=curve` and PerfKitBenchmarker's `fio_latency_sla` find them.

    [capacity]
    rates = [500, 1000, 2000, 4000]                    # offered IOPS in all (every stream of a load point)
    # or: rates = { start = 500, stop = 4000, steps = 8 }    # evenly spaced, both ends included
    slo = { percentile = 99, under = "2ms" }           # the objective: a percentile of fio's latency, at most
    refine = 2                 # at most this many extra steps, bisecting between the capacity and the next step
    arrivals = "poisson"       # how fio spaces the I/Os at that rate (rate_process): "poisson" or "uniform"

Each rate is one value of the `rate` coordinate (a record's `coords`, a `cells.csv` column, the `…__rate2000…` part
of a cell's id): an outer loop of the expansion like a swept service time, configurations interleaved at each. A
cell's streams share the rate, each a whole number of IOPS (fio's `rate_iops` per job; a mix splits each stream's
into reads and writes), so its load point's outstanding I/Os are a ceiling, not the load: the rate offers the I/Os
whether or not the storage keeps up, and latency shows the queue. After the ladder, the bounded search adds steps
per configuration (the schedule, run.search): the midpoint between the step at its capacity and the next step, at
most ``refine`` of them, each measured at every repeat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .sweep import UntouchedStep

MAX_RATES = 20  # a longer ladder is a study of its own
MAX_REFINE = 10
MAX_RATE = 10**9
#: The percentiles a record keeps (analysis.latency.PERCENTILES), the ones an objective may name.
SLO_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _whole(v: Any, field: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_RATE:
        raise ValueError(f"{field} must be a whole number of IOPS from 1 to {MAX_RATE:,} (got {v!r})")
    return v


class RateRule(_Model):
    """Evenly spaced offered rates from ``start`` to ``stop``, both included."""

    start: int
    stop: int
    steps: int = Field(ge=2, le=MAX_RATES)

    @field_validator("start", "stop", mode="before")
    @classmethod
    def _rate(cls, v: Any, info) -> int:
        return _whole(v, info.field_name)

    @model_validator(mode="after")
    def _ascending(self) -> "RateRule":
        if self.stop - self.start < self.steps - 1:
            raise ValueError(f"rates: stop ({self.stop}) must be at least start + steps - 1 "
                             f"({self.start + self.steps - 1}) so that every step is its own rate")
        return self

    def values(self) -> list[int]:
        return [round(self.start + i * (self.stop - self.start) / (self.steps - 1)) for i in range(self.steps)]


class CapacitySlo(_Model):
    """The objective a step meets: the ``percentile`` of fio's latency (merged over the window) at most ``under``."""

    percentile: float = Field(description="50, 90, 95, 99 or 99.9")
    under: float = Field(description="written '2ms' or '500us'; kept in seconds")

    @field_validator("percentile", mode="before")
    @classmethod
    def _percentile(cls, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) not in SLO_PERCENTILES:
            raise ValueError(f"percentile must be one a record keeps: {', '.join(f'{p:g}' for p in SLO_PERCENTILES)} "
                             f"(got {v!r})")
        return float(v)

    @field_validator("under", mode="before")
    @classmethod
    def _under(cls, v: Any) -> float:
        from .longrun import parse_latency

        return parse_latency(v)

    @property
    def key(self) -> str:
        """The record's percentile key: 'p99', 'p99.9'."""
        return f"p{self.percentile:g}"

    @property
    def under_us(self) -> float:
        return self.under * 1e6

    def summary(self) -> str:
        """'p99 ≤ 2 ms'."""
        us = self.under_us
        return f"{self.key} ≤ {us / 1000:g} ms" if us >= 1000 else f"{self.key} ≤ {us:g} µs"


class Capacity(_Model):
    """`[capacity]` (see the module's text)."""

    rates: list[int] | RateRule = Field(description="offered IOPS in all, ascending, or { start, stop, steps }")
    slo: CapacitySlo = Field(description="{ percentile = 99, under = \"2ms\" }")
    refine: int = Field(default=2, ge=0, le=MAX_REFINE, description="extra steps of the bounded search, at most")
    arrivals: Literal["poisson", "uniform"] = Field(default="poisson", description="fio's rate_process")

    @field_validator("rates", mode="before")
    @classmethod
    def _rates(cls, v: Any) -> Any:
        if isinstance(v, dict):  # the rule's own errors, not a union's "should be a valid list"
            try:
                return RateRule.model_validate(v)
            except ValueError as e:
                errors = getattr(e, "errors", lambda: [])()
                where = ".".join(str(x) for x in errors[0]["loc"]) + ": " if errors and errors[0]["loc"] else ""
                raise ValueError(where + (errors[0]["msg"].removeprefix("Value error, ") if errors else str(e))) \
                    from None
        if not isinstance(v, list) or not 2 <= len(v) <= MAX_RATES:
            raise ValueError(f"rates must be a list of 2 to {MAX_RATES} offered IOPS, e.g. [500, 1000, 2000], or "
                             "{ start, stop, steps }")
        out = [_whole(x, "each rate") for x in v]
        if any(b <= a for a, b in zip(out, out[1:])):
            raise ValueError(f"rates must ascend without repeats (got {v}); sort them")
        return out

    @property
    def ladder(self) -> tuple[int, ...]:
        """The plan's offered rates, ascending (the refinement's steps come between them)."""
        return tuple(self.rates.values() if isinstance(self.rates, RateRule) else self.rates)

    def axis(self) -> "RateAxis":
        return RateAxis(self.ladder, self.arrivals)

    def step(self, rate: int) -> "RateStep":
        """The step at offered ``rate`` (a ladder's or the search's)."""
        return RateStep(rate, self.arrivals)

    def summary(self) -> str:
        """'offered 500, 1000, 2000 IOPS (Poisson arrivals), objective p99 ≤ 2 ms, up to 2 extra steps'."""
        return (f"offered {', '.join(map(str, self.ladder))} IOPS ({self.arrivals} arrivals), objective "
                f"{self.slo.summary()}, up to {self.refine} extra step{'s' if self.refine != 1 else ''} between the "
                "capacity and the next step")


@dataclass(frozen=True)
class RateAxis:
    """The ladder as a stage kind of the expansion (plan.stages.StageKind): each rate its own cell, nothing done
    to the data before it."""

    values: tuple[int, ...]
    arrivals: str
    name: ClassVar[str] = "rate"
    sequence: ClassVar[bool] = False
    dimensions: ClassVar[tuple[str, ...]] = ("rate",)

    def step_list(self) -> list["RateStep"]:
        return [RateStep(v, self.arrivals) for v in self.values]

    def applies(self, outer: Any) -> bool:
        return True


@dataclass(frozen=True)
class RateStep(UntouchedStep):
    """One offered rate (plan.stages.Step): its own cell, the data untouched; its streams share the rate."""

    value: int
    arrivals: str = "poisson"
    dimension: ClassVar[str] = "rate"

    @property
    def key(self) -> str:
        return f"rate{self.value}"

    def coords(self) -> dict[str, str | int]:
        return {"rate": self.value}

    def per_stream(self, streams: int) -> list[int]:
        """Each stream's whole IOPS, adding up to the rate (the first streams take the remainder)."""
        base, extra = divmod(self.value, streams)
        return [base + (1 if i < extra else 0) for i in range(streams)]


def check_capacity(plan: Any) -> str | None:
    """Why ``plan``'s [capacity] cannot run (one line naming the field), or None."""
    cap = getattr(plan, "capacity", None)
    if cap is None:
        return None
    from .repeats import AdaptiveRepeats

    paced = [w.name for w in plan.workloads if w.rate_iops is not None or w.replay is not None or
             w.bursts is not None or w.think_time is not None]
    if paced:
        return (f"capacity: workload {paced[0]} sets its own pace (rate_iops, bursts, think_time or replay); the "
                "ladder's rate paces every workload of the plan: remove it there")
    if plan.stage is not None:
        return "capacity: not with [stage.fill] or [stage.age] (their data is not restored between steps); split it"
    if isinstance(plan.method.repeats, AdaptiveRepeats):
        return "capacity: adaptive repeats do not go with the ladder's search yet; give method.repeats a number"
    streams = max(lp.hosts * lp.streams for lp in plan.load_points)
    if cap.ladder[0] < streams:
        return (f"capacity.rates: the lowest rate, {cap.ladder[0]} IOPS, is below one I/O per second for each of the "
                f"{streams} streams of a load point; raise it or lower the streams")
    return None


def oio_warning(plan: Any) -> str | None:
    """A load point whose outstanding I/Os cannot carry the ladder's top rate at the objective's latency (Little's
    law: in flight = rate × latency), or None: there fio, not the storage, holds I/Os back."""
    cap = getattr(plan, "capacity", None)
    if cap is None:
        return None
    top, under = cap.ladder[-1], cap.slo.under
    for lp in plan.load_points:
        for w in plan.workloads:
            n = lp.hosts * lp.streams * lp.oio_for(w)
            if n < top * under:
                return (f"capacity: load point {lp.label(w)} keeps at most {n} I/Os in flight, which carry "
                        f"{n / under:,.0f} IOPS at the objective's {cap.slo.summary().split('≤ ')[1]} (Little's "
                        f"law), below the top rate {top:,}: where latency nears the objective, fio and not the storage "
                        f"holds the I/Os back (the step fails as not kept up); raise oio to at least "
                        f"{math.ceil(top * under / (lp.hosts * lp.streams))} per stream")
    return None
