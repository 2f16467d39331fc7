"""Long runs in a plan: the series interval, the latency objective, and the aging stage.

```toml
[method]
interval = "10s"            # one series row per 10 s (fio's status interval); default 1 s
slo = { p95 = "20ms" }      # a latency objective: the report gives the share of intervals that missed it

[stage.age]
duration = "84h"            # how long the data is aged in all, one workload running without restore
every = "1h"                # one measured cell (a row of cells.csv) per step of aging
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from .stages import Fill
from .units import format_duration, parse_duration

#: The longest aging: 30 days, as the longest window.
MAX_AGE_S = 30 * 86400
#: The most steps an aging stage may have (each is a cell, a fio run and a row of cells.csv).
MAX_AGE_STEPS = 10_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def parse_interval(v: Any) -> int:
    """Whole seconds of one series interval (fio's --status-interval takes whole seconds)."""
    s = parse_duration(v)
    if not 1 <= s <= 3600 or s != int(s):  # (infinity first: int() of it raises)
        raise ValueError(f"interval must be a whole number of seconds from 1s to 1h (got {v!r})")
    return int(s)


_LATENCY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(s|ms|us|µs)\s*$")
_LATENCY_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


def parse_latency(v: Any) -> float:
    """Seconds from a latency written '20ms', '500us' (or 'µs'), '1s', or a number of seconds."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"expected a latency like '20ms' or '500us', got {v!r}")
    if isinstance(v, str):
        m = _LATENCY.match(v)
        if not m:
            raise ValueError(f"expected a latency like '20ms' or '500us', got {v!r}")
        v = float(m.group(1)) * _LATENCY_UNITS[m.group(2)]
    if not 0 < float(v) <= 3600:
        raise ValueError(f"a latency objective must be above 0 and at most 1h (got {v!r})")
    return float(v)


#: method.interval: whole seconds from 1 s to 1 h, written "10s" or 10.
Interval = Annotated[int, BeforeValidator(parse_interval)]


class Slo(_Model):
    """A latency objective per interval: the merged percentile of every interval against a limit."""

    p95: float | None = Field(default=None, gt=0, description="seconds; the 95th percentile's limit")
    p99: float | None = Field(default=None, gt=0, description="seconds; the 99th percentile's limit")
    mean: float | None = Field(default=None, gt=0, description="seconds; the mean's limit")

    @field_validator("p95", "p99", "mean", mode="before")
    @classmethod
    def _seconds(cls, v: Any) -> float | None:
        return None if v is None else parse_latency(v)

    @model_validator(mode="after")
    def _one(self) -> "Slo":
        if sum(x is not None for x in (self.p95, self.p99, self.mean)) != 1:
            raise ValueError("slo takes exactly one of p95, p99 or mean, e.g. slo = { p95 = \"20ms\" }")
        return self

    @property
    def metric(self) -> str:
        """'p95', 'p99' or 'mean'."""
        return next(k for k in ("p95", "p99", "mean") if getattr(self, k) is not None)

    @property
    def limit_us(self) -> float:
        """The limit in µs (the unit of every latency column)."""
        return float(getattr(self, self.metric)) * 1e6

    def summary(self) -> str:
        """'p95 ≤ 20ms'."""
        return f"{self.metric} ≤ {_latency(self.limit_us)}"


def _latency(us: float) -> str:
    return f"{us / 1000:g}ms" if us >= 1000 else f"{us:.4g}µs"


class Aging(_Model):
    """Keep one workload running on the same data for ``duration``, measured in steps of ``every``.

    The steps are cells with the coordinates stage = "age" and age_s (the aging time at the step's start);
    nothing is restored between them and only the first warms up, so the data ages without a break but
    the few seconds fio takes to restart between steps.
    """

    duration: float = Field(gt=0, le=MAX_AGE_S, description="seconds of aging in all")
    every: float = Field(gt=0, le=MAX_AGE_S, description="seconds per measured step")
    at_fill: int | None = Field(default=None, ge=1, le=100, description="with [stage.fill]: age at this fill "
                                "level only (its cells); the other levels are measured once, as without aging")

    @field_validator("duration", "every", mode="before")
    @classmethod
    def _seconds(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _steps(self) -> "Aging":
        if self.every > self.duration:
            raise ValueError(f"age.every ({format_duration(self.every)}) is longer than age.duration "
                             f"({format_duration(self.duration)}); make every a fraction of duration")
        if self.steps > MAX_AGE_STEPS:
            raise ValueError(f"age makes {self.steps} steps (duration / every); at most {MAX_AGE_STEPS}: "
                             "make every longer")
        if self.duration % self.every:
            raise ValueError(f"age.duration ({format_duration(self.duration)}) is not a whole number of "
                             f"age.every ({format_duration(self.every)})")
        return self

    @property
    def steps(self) -> int:
        """Measured steps (cells) per aging sequence."""
        return int(round(self.duration / self.every))

    #: The coordinates its steps add to records.
    dimensions: ClassVar[tuple[str, ...]] = ("stage", "age_s")
    #: Each cell is one aging sequence of its steps.
    sequence: ClassVar[bool] = True

    def step_list(self) -> list["AgeStep"]:
        """Its steps in run order: one aging sequence."""
        return [AgeStep(k, self.every) for k in range(self.steps)]

    def applies(self, outer: Any) -> bool:
        """Whether cells at the outer stage step ``outer`` (a fill level, or None) age: every cell, or only
        those at ``at_fill``."""
        return self.at_fill is None or (outer is not None and getattr(outer, "level", None) == self.at_fill)

    def summary(self) -> str:
        """'aged 84h, measured every 1h'."""
        at = f" at fill {self.at_fill} %" if self.at_fill is not None else ""
        return f"aged {format_duration(self.duration)}{at}, measured every {format_duration(self.every)}"


class Stage(_Model):
    """``[stage.*]``: steps that change the data and are not restored between them (plan.stages)."""

    fill: Fill | None = None
    age: Aging | None = None


def plan_seconds_per_cell(plan: Any) -> float:
    """Warm-up and window per cell, on average: an aging step lasts age.every, and only the first warms up."""
    m, age = plan.method, plan.stage.age if plan.stage is not None else None
    return m.warmup + m.duration if age is None else (m.warmup + age.duration) / age.steps


@dataclass(frozen=True)
class AgeStep:
    """Step ``index`` of an aging sequence: the data has aged ``index × every`` seconds at its start."""

    index: int
    every: float
    dimension: ClassVar[str] = "age"
    in_key: ClassVar[bool] = False
    changes_data: ClassVar[bool] = False

    @property
    def key(self) -> str:
        return f"a{self.index}"

    @property
    def continues(self) -> bool:
        return self.index > 0  # the data has been under load without a break since the first step's warm-up

    @property
    def seconds(self) -> float | None:
        return self.every

    @property
    def age_s(self) -> int:
        """The data's aging time at the step's start, s."""
        return int(round(self.index * self.every))

    def coords(self) -> dict[str, str | int]:
        return {"stage": "age", "age_s": self.age_s}

    def region(self, size: int) -> int:
        return size
