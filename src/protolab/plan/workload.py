"""The plan's workloads (access specs) and the pieces every plan model shares: strict frozen models, limits."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from . import safety, shape
from .shape import Bursts, HotZone, Replay, Skew
from .units import format_size, parse_size

SCHEMA_VERSION = 1

#: The deepest queue a stream may ask for: io_uring's largest ring (IORING_MAX_ENTRIES); deeper fails in fio.
MAX_OIO = 32768
#: Load streams per host and hosts per load point: far beyond any study, small enough to stay a mistake.
MAX_STREAMS = 1024
MAX_HOSTS = 256
#: The longest window or warm-up: 30 days (the seeds' longest run was 84 hours).
MAX_DURATION_S = 30 * 86400
#: The largest data set per target: 1 PiB.
MAX_DATA = 1024**5


class _Model(BaseModel):
    # strict: no "3" → 3, true → 1 or "yes" → true; sizes and durations parse their own written forms
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


#: Free text shown to people: no control characters (a terminal escape could rewrite the screen).
Description = Annotated[str, AfterValidator(lambda v: safety.check_text(v, "description"))]


class Workload(_Model):
    """An access spec, as Iometer and the studies define one."""

    name: str = Field(description=safety.NAME_RULE)
    description: Description = ""
    block_size: int | dict[int, float] = Field(
        description="bytes, or a mix {size: weight}; written '4k' or {'4k' = 75, '64k' = 25}"
    )
    read_pct: float = Field(ge=0, le=100, description="share of I/Os that read, in %")
    random_pct: float = Field(ge=0, le=100, description="share of I/Os at random offsets, in %")
    oio: int = Field(default=4, ge=1, le=MAX_OIO, description="outstanding I/Os per load stream")
    rate_iops: int | None = Field(default=None, gt=0, le=10**9,
                                  description="optional cap per load stream")
    arrivals: Literal["uniform", "poisson"] = Field(
        default="uniform", description="how rate_iops spaces I/Os: evenly, or as a Poisson process (fio rate_process)")
    bursts: Bursts | None = Field(default=None, description="on/off load: { ios, pause }")
    think_time: float | None = Field(default=None, description="seconds of idle after every think_every I/Os")
    think_every: int = Field(default=1, ge=1, le=10**6, description="I/Os between two think times")
    hot_zones: list[HotZone] | None = Field(default=None, description="skew: [{ io_pct, space_pct }, …]")
    skew: Skew | None = Field(default=None, description="{ zipf = θ } | { pareto = h } | { normal = % }")
    replay: Replay | None = Field(default=None, description="a trace replayed by each stream (iolog v2/v3, blktrace)")
    trace: dict[str, Any] | None = Field(default=None, description="what the loader read in the replayed trace")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        return safety.check_name(v, "workload")

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

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, v: Any) -> float | None:
        return shape.think_seconds(v)

    @field_validator("replay", mode="before")
    @classmethod
    def _replay(cls, v: Any) -> Any:
        return shape.replay_form(v)

    @model_validator(mode="after")
    def _shape(self) -> "Workload":
        shape.check_shape(self)
        return self

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
        if self.replay is not None:
            return f"replay of {self.replay.file} ({bs}, {self.read_pct:g} % read), {self.oio} OIO"
        return (f"{bs}, {self.read_pct:g} % read, {self.random_pct:g} % random, {self.oio} OIO{cap}"
                f"{shape.shape_summary(self)}")


def _block(v: Any) -> int:
    n = parse_size(v)
    if n < 512 or n % 512:
        raise ValueError(f"block size must be a positive multiple of 512 bytes (got {v!r})")
    if n > 1024**3:
        raise ValueError(f"block size must be at most 1G (got {v!r})")
    return n


