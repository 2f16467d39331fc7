"""The shape of an application's load over time: arrivals, bursts, think time, hot zones, trace replay.

Each is a workload field the plan validates here and the job file turns into fio's own
options (engine/jobfile.py): `rate_process`, `thinktime`/`thinktime_blocks`,
`random_distribution=zoned`, `read_iolog`. Nothing here reads a file: a replayed
trace is read and summarised by the loader (protolab.traces).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from . import safety
from .units import format_duration, parse_duration

#: The longest burst or think time: an hour (fio takes microseconds as a 32-bit count of its own).
MAX_PAUSE_S = 3600.0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Bursts(_Model):
    """On/off load: ``ios`` I/Os as fast as the stream's OIO and the storage allow, then ``pause`` idle.

    fio 3.33 has no rate that survives a pause (after a think time it catches up at full speed; the
    `rate_ign_think` option came later), so a burst's peak is the storage's, not a set multiple: the
    mean is about ios / (pause + the burst's own time).
    """

    ios: int = Field(ge=1, le=10**9, description="I/Os per burst and stream")
    pause: float = Field(ge=0.001, le=MAX_PAUSE_S, description="seconds idle after each burst")

    @field_validator("pause", mode="before")
    @classmethod
    def _pause(cls, v: Any) -> float:
        return parse_duration(v)


class HotZone(_Model):
    """A share of the I/Os that falls on a share of the space (fio's zoned random distribution)."""

    io_pct: int = Field(ge=1, le=100, description="% of the random I/Os")
    space_pct: int = Field(ge=1, le=100, description="% of the stream's region they fall on")


class Skew(_Model):
    """Random offsets drawn from one of fio's skewed distributions instead of uniformly: exactly one key."""

    zipf: float | None = Field(default=None, gt=0, le=100, description="Zipf theta (fio: not 1.0)")
    pareto: float | None = Field(default=None, gt=0, lt=1, description="Pareto power h, 0 < h < 1")
    normal: float | None = Field(default=None, ge=0, lt=100,
                                 description="Gaussian, its deviation as % of the region, 0 ≤ d < 100")

    @field_validator("zipf", "pareto", "normal", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        return None if v is None else safety.finite_number(v, "skew")

    @model_validator(mode="after")
    def _one(self) -> "Skew":
        given = [k for k in ("zipf", "pareto", "normal") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("skew takes exactly one of zipf, pareto or normal, e.g. skew = { zipf = 1.2 }")
        if self.zipf == 1.0:
            raise ValueError("skew.zipf: fio's Zipf theta must differ from 1.0")
        return self

    def fio(self) -> str:
        """fio's random_distribution value: 'zipf:1.2'."""
        kind = next(k for k in ("zipf", "pareto", "normal") if getattr(self, k) is not None)
        return f"{kind}:{getattr(self, kind):g}"


class Replay(_Model):
    """A captured trace (fio iolog v2/v3 or blktrace) replayed by each stream, fitted into its region."""

    file: str = Field(min_length=1, max_length=4096, description="path of the trace; read, never written")
    time_scale: float = Field(default=1.0, gt=0, le=1000,
                              description="multiplies the trace's gaps: 0.5 replays twice as fast")
    no_stall: bool = Field(default=False, description="ignore the trace's timing: as fast as the OIO allows")
    # the loaded plan file's directory, where root itself may read a trace (traces.may_read): set by the plan's
    # loader, never by a plan, and kept out of the stored plan (a resumed plan has none)
    _plan_dir: str | None = PrivateAttr(default=None)

    @property
    def plan_dir(self) -> Path | None:
        """The plan file's directory when the plan was loaded from one (`plan.load`), else None."""
        return Path(self._plan_dir) if self._plan_dir else None

    @field_validator("file")
    @classmethod
    def _file(cls, v: str) -> str:
        if safety.has_control(v) or not v.strip():
            raise ValueError("replay.file is empty or holds a control character; write the trace's path")
        return v

    @field_validator("time_scale", mode="before")
    @classmethod
    def _scale(cls, v: Any) -> Any:
        return safety.finite_number(v, "replay.time_scale")


def replay_form(v: Any) -> Any:
    """``replay = "FILE"`` is short for ``replay = { file = "FILE" }``."""
    return {"file": v} if isinstance(v, str) else v


def think_seconds(v: Any) -> float | None:
    """A think time: whole milliseconds (as every plan duration), at least 1ms and at most an hour."""
    if v is None:
        return None
    s = parse_duration(v)
    if not 1e-3 <= s <= MAX_PAUSE_S:
        raise ValueError(f"think_time must be between 1ms and 1h (got {v!r})")
    return s


def check_shape(w: Any) -> None:
    """Rules across a workload's shape fields; ValueError says which field to change."""
    if w.arrivals == "poisson" and w.rate_iops is None:
        raise ValueError("arrivals = 'poisson' needs rate_iops (the mean rate per stream)")
    if w.bursts is not None:
        if w.rate_iops is not None:
            raise ValueError("bursts run as fast as the OIO allows, then pause; remove rate_iops (fio 3.33 "
                             "catches up on a rate after every pause, so a capped burst cannot be kept)")
        if w.think_time is not None:
            raise ValueError("bursts and think_time both use fio's thinktime; choose one")
    if w.hot_zones is not None:
        if not 1 <= len(w.hot_zones) <= 64:
            raise ValueError("hot_zones takes 1 to 64 zones")
        for what in ("io_pct", "space_pct"):
            total = sum(getattr(z, what) for z in w.hot_zones)
            if total != 100:
                raise ValueError(f"hot_zones: the zones' {what} must add up to 100 (got {total})")
        if w.random_pct <= 0:
            raise ValueError("hot_zones place random I/Os; set random_pct above 0 or remove hot_zones")
    if w.skew is not None:
        if w.hot_zones is not None:
            raise ValueError("skew and hot_zones both set fio's random_distribution; choose one")
        if w.random_pct <= 0:
            raise ValueError("skew places random I/Os; set random_pct above 0 or remove skew")
    if w.replay is not None:
        replay_conflicts({f: getattr(w, f) for f in REPLAY_EXCLUDES})
    elif w.trace is not None:
        raise ValueError("trace is what protolab read in a replayed file; remove it (or add replay)")


#: Fields a replayed trace decides itself.
REPLAY_EXCLUDES = ("rate_iops", "bursts", "think_time", "hot_zones", "skew", "arrivals")


def replay_conflicts(fields: dict[str, Any]) -> None:
    """ValueError naming the shape fields (set, not default) that a replay cannot take."""
    extra = [f for f in REPLAY_EXCLUDES if fields.get(f) is not None and not (f == "arrivals" and
                                                                              fields[f] == "uniform")]
    if extra:
        raise ValueError(f"replay takes its timing and offsets from the trace; remove {', '.join(extra)}")


def shape_summary(w: Any) -> str:
    """', Poisson arrivals, bursts 4× for 1s, …' (empty for a plain access spec)."""
    parts = []
    if w.arrivals == "poisson":
        parts.append("Poisson arrivals")
    if w.bursts is not None:
        parts.append(f"bursts of {w.bursts.ios} I/Os, {_pause(w.bursts.pause)} apart")
    if w.think_time is not None:
        every = f" every {w.think_every} I/Os" if w.think_every != 1 else " per I/O"
        parts.append(f"think {_pause(w.think_time)}{every}")
    if w.skew is not None:
        parts.append(f"{w.skew.fio()} offsets")
    if w.hot_zones is not None:
        parts.append("hot zones " + " ".join(f"{z.io_pct}/{z.space_pct}" for z in w.hot_zones))
    return "".join(f", {p}" for p in parts)


def _pause(seconds: float) -> str:
    """'5ms' below a second, '2s' or '5m' above."""
    return f"{seconds * 1000:g}ms" if seconds < 1 else format_duration(seconds)
