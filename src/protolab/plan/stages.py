"""Stages: a dimension of the cell whose steps change the data and are not restored between them.

`fill` is one kind (S4, the EMC note: write the LUNs sequentially to 10 / 25 / 50 /
100 % of their capacity, then run the random workload on the filled space):

    [method.fill]
    levels = [10, 25, 50, 100]     # % of each target's capacity, ascending

Before the first cell of a level protolab writes every target sequentially from
where the previous level ended up to this level (only the part not yet written),
and that level's cells measure on the filled region only. A stage is the
outermost loop of the expansion, so each step's cells follow its change of the
data; it is named in the record's `coords` (e.g. `fill = 25`), in cells.csv (a
`fill` column), in resume's identity of a cell (`…__fill25__r1`) and in the
report (x axis = the stage's steps). Another kind (e.g. `age`) is another
`StageStep.dimension`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .coordinates import value_label

#: Fill levels end on whole MiB, as stream regions start on them (plan.preflight.ALIGN).
MIB = 1024**2


class Fill(BaseModel):
    """`[method.fill]`: fill levels in % of each target's capacity, written sequentially before their cells."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    levels: list[int] = Field(min_length=1, max_length=100,
                              description="% of each target's capacity, ascending, e.g. [10, 25, 50, 100]")
    block_size: int = Field(default=1024**2, description="bytes per sequential write of the fill (default 1M)")

    @field_validator("levels", mode="before")
    @classmethod
    def _levels(cls, v: Any) -> Any:
        if not isinstance(v, list) or not v:
            raise ValueError("levels must be a list of whole percentages, e.g. levels = [10, 25, 50, 100]")
        for x in v:
            if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 100:
                raise ValueError(f"each fill level must be a whole percentage from 1 to 100 (got {x!r})")
        if any(b <= a for a, b in zip(v, v[1:])):
            raise ValueError(f"fill levels must ascend, each written on top of the last (got {v}); "
                             "sort them and remove repeats")
        return v

    @field_validator("block_size", mode="before")
    @classmethod
    def _bs(cls, v: Any) -> int:
        from .units import parse_size

        n = parse_size(v)
        if n < 4096 or n > 64 * 1024**2 or n % 4096:
            raise ValueError(f"block_size must be a multiple of 4k between 4k and 64M (got {v!r})")
        return n

    def summary(self) -> str:
        """'fill to 10, 25, 50, 100 % (sequential writes, no restore between levels)'."""
        return f"fill to {', '.join(map(str, self.levels))} % (sequential writes, no restore between levels)"


@dataclass(frozen=True)
class StageStep:
    """One step of a stage dimension: e.g. dimension 'fill', value 25 (per cent)."""

    dimension: str
    value: int

    @property
    def key(self) -> str:
        """Part of a cell id: 'fill25'."""
        return f"{self.dimension}{self.value}"

    @property
    def label(self) -> str:
        """'fill 25 %'."""
        return value_label(self.dimension, self.value)


def stage_steps(method: Any) -> list[StageStep | None]:
    """The plan's stage steps in run order; [None] when it declares no stage."""
    fill = getattr(method, "fill", None)
    if fill is None:
        return [None]
    return [StageStep("fill", level) for level in fill.levels]


def filled_bytes(capacity: int, level: int) -> int:
    """Bytes of a target of ``capacity`` bytes written at fill ``level`` %: whole MiB, at least 1 MiB."""
    want = capacity * level // 100
    if level >= 100:
        return capacity
    return max(MIB, want - want % MIB) if capacity >= MIB else capacity
