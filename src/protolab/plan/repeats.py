"""Adaptive repeats: `method.repeats = { min = 2, max = 10, until_ci_pct = 3 }` (an integer stays a fixed count).

A cell gets `min` repeats, then more — one at a time, interleaved with the other
configurations that still need one at the same load point — while its IOPS are not
yet as tight as asked, and never more than `max`. S5's rule "two runs, a third when
the first two disagree" is `{ min = 2, max = 3, until_agree_pct = 5 }`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .safety import finite_number

MAX_REPEATS = 100


class AdaptiveRepeats(BaseModel):
    """How many measured windows a cell gets: at least ``min``, at most ``max``, more only while needed."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    min: int = Field(ge=1, le=MAX_REPEATS, description="repeats every cell gets")
    max: int = Field(ge=1, le=MAX_REPEATS, description="repeats no cell goes beyond")
    until_ci_pct: float | None = Field(
        default=None, gt=0, le=100,
        description="stop once the 95 % interval of the mean IOPS is within ± this % of the mean")
    until_agree_pct: float | None = Field(
        default=None, gt=0, le=100,
        description="stop once the repeats' IOPS lie within this % of their median (max − min over the median)")

    @field_validator("until_ci_pct", "until_agree_pct", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        return None if v is None else finite_number(v, "method.repeats")

    @model_validator(mode="after")
    def _consistent(self) -> "AdaptiveRepeats":
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        if self.until_ci_pct is None and self.until_agree_pct is None:
            raise ValueError("give until_ci_pct or until_agree_pct (or both), or a whole number of "
                             "repeats")
        if self.min < 2:
            raise ValueError("min must be at least 2 — one window has no interval and no spread")
        return self

    def summary(self) -> str:
        """'2–10 repeats until the 95 % interval is within ±3 %'."""
        rules = []
        if self.until_ci_pct is not None:
            rules.append(f"the 95 % interval is within ±{self.until_ci_pct:g} %")
        if self.until_agree_pct is not None:
            rules.append(f"the repeats agree within {self.until_agree_pct:g} %")
        return f"{self.min}–{self.max} repeats until {' and '.join(rules)}"


def repeat_bounds(repeats: int | AdaptiveRepeats) -> tuple[int, int]:
    """(fewest, most) repeats a cell gets."""
    if isinstance(repeats, int):
        return repeats, repeats
    return repeats.min, repeats.max


def parse_repeats(v: Any) -> Any:
    """A table becomes AdaptiveRepeats, its first problem one ValueError naming the key; a number passes on."""
    if not isinstance(v, dict):
        return v
    try:
        return AdaptiveRepeats.model_validate(v)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field; use min, max, until_ci_pct, until_agree_pct"
        elif err["type"] == "missing":
            msg = "missing; a table of repeats needs min and max"
        elif "input" in err and err["type"] != "value_error":
            msg = f"{msg} (got {err['input']!r})"
        raise ValueError(f"{key}: {msg}" if key else msg) from None
