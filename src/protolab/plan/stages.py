"""Stages: dimensions of the cell whose steps change the data and are not restored between them.

A stage is configured in one form, ``[stage.NAME]``, and each kind implements one protocol: its ``steps()``
(each a `Step`: its key in cell ids, whether it is its own cell or one of a sequence, what is done to the data
before it, whether it goes on from the previous one, its window, the coordinates it adds and the region it
measures), its ``dimensions`` (the coordinates), and no restore between steps. `Fill` (here) and
`plan.longrun.Aging` are the two kinds; `Plan.stages` lists a plan's, outermost first.

`fill` (S4, the EMC note: write the LUNs sequentially to 10 / 25 / 50 / 100 % of their capacity, then run the
random workload on the filled space):

    [stage.fill]                   # [method.fill] in older plans means the same
    levels = [10, 25, 50, 100]     # % of each target's capacity, ascending

Before the first cell of a level protolab writes every target sequentially from
where the previous level ended up to this level (only the part not yet written),
and that level's cells measure on the filled region only. A stage is the
outermost loop of the expansion, so each step's cells follow its change of the
data; it is named in the record's `coords` (e.g. `fill = 25`), in cells.csv (a
`fill` column), in resume's identity of a cell (`…__fill25__r1`) and in the
report (x axis = the stage's steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .coordinates import value_label

#: Fill levels end on whole MiB, as stream regions start on them (plan.preflight.ALIGN).
MIB = 1024**2


class Fill(BaseModel):
    """`[stage.fill]`: fill levels in % of each target's capacity, written sequentially before their cells."""

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

    #: The coordinates its steps add to records.
    dimensions: ClassVar[tuple[str, ...]] = ("fill",)
    #: Each step is its own cell (not a sequence within one).
    sequence: ClassVar[bool] = False

    def step_list(self) -> list[FillStep]:
        """Its steps in run order (levels ascend)."""
        return [FillStep(level) for level in self.levels]

    def applies(self, outer: Any) -> bool:
        """Every cell has a fill level."""
        return True

    def summary(self) -> str:
        """'fill to 10, 25, 50, 100 % (sequential writes, no restore between levels)'."""
        return f"fill to {', '.join(map(str, self.levels))} % (sequential writes, no restore between levels)"


class StageKind(Protocol):
    """A kind of stage ([stage.NAME]): its steps, their coordinates, whether a cell is a sequence of them."""

    dimensions: ClassVar[tuple[str, ...]]  # the coordinates its steps add to records
    sequence: ClassVar[bool]  # True: each cell is a sequence of the steps (aging); False: each step its own cell

    def step_list(self) -> list["Step"]:
        """Its steps in run order."""

    def applies(self, outer: Any) -> bool:
        """Whether cells at an outer stage's step (or None) have this stage's steps."""


class Step(Protocol):
    """One step of a stage, as every phase asks it (a fill level, an aging step)."""

    dimension: str  # the stage's name: "fill", "age"

    @property
    def key(self) -> str:
        """Its part of a cell id: 'fill25' (inside the cell's key), 'a3' (after the repeat: one sequence)."""

    @property
    def in_key(self) -> bool:
        """True when the step is part of the cell's key (each step its own cell); False when the steps of one
        cell are a sequence measured one after the other (aging)."""

    @property
    def changes_data(self) -> bool:
        """True when something is done to the data before the step's first cell (a fill writes)."""

    @property
    def continues(self) -> bool:
        """True when the step goes on from the previous one: no restore, no warm-up between them."""

    @property
    def seconds(self) -> float | None:
        """The step's measured window when the stage sets it (an aging step: every), else None."""

    def coords(self) -> dict[str, str | int]:
        """The coordinates the step adds to its cells' records (plan.coordinates)."""

    def region(self, size: int) -> int:
        """The bytes of a target of ``size`` its cells measure on."""


@dataclass(frozen=True)
class FillStep:
    """A fill level: the targets written sequentially up to ``level`` % before the level's cells."""

    level: int
    dimension: ClassVar[str] = "fill"
    in_key: ClassVar[bool] = True
    changes_data: ClassVar[bool] = True
    continues: ClassVar[bool] = False
    seconds: ClassVar[float | None] = None

    @property
    def value(self) -> int:
        """The level, % of each target."""
        return self.level

    @property
    def key(self) -> str:
        return f"fill{self.level}"

    @property
    def label(self) -> str:
        """'fill 25 %'."""
        return value_label(self.dimension, self.level)

    def coords(self) -> dict[str, str | int]:
        return {"fill": self.level}

    def region(self, size: int) -> int:
        return filled_bytes(size, self.level)


#: The name older code and tests use for a fill level.
StageStep = FillStep


def stage_steps(plan: Any) -> list[FillStep | None]:
    """The plan's fill levels in run order; [None] without [stage.fill]."""
    fill = getattr(plan, "fill", None)
    return [FillStep(level) for level in fill.levels] if fill is not None else [None]


def normalise_stages(data: Any) -> Any:
    """A plan's data with its stages in their one form, [stage.*]: [method.fill] (older plans) moves to
    [stage.fill]; a fill refuses restore and prepare (both would undo or replace it) and turns prepare off."""
    if not isinstance(data, dict):
        return data
    method = data.get("method")
    if isinstance(method, dict) and "fill" in method:
        method = dict(method)
        fill = method.pop("fill")
        stage = data.get("stage") if isinstance(data.get("stage"), dict) else {}
        if fill is not None:
            if "fill" in stage:
                raise ValueError("fill is given twice, in [method.fill] and [stage.fill]; keep [stage.fill]")
            stage = {**stage, "fill": fill}
        data = {**data, "method": method, **({"stage": stage} if stage else {})}
    stage = data.get("stage")
    if isinstance(stage, dict) and stage.get("fill") is not None and isinstance(data.get("method", {}), dict):
        method = dict(data.get("method") or {})
        if method.get("restore") is True:
            raise ValueError("fill and restore = true cannot go together: a restore before each cell would "
                             "undo the fill; remove restore (or the fill levels)")
        if method.get("prepare") is True:
            raise ValueError("fill and prepare = true cannot go together: prepare writes each whole target "
                             "before the first cell; the fill writes it level by level — remove prepare")
        data = {**data, "method": {**method, "prepare": False}}
    return data


def filled_bytes(capacity: int, level: int) -> int:
    """Bytes of a target of ``capacity`` bytes written at fill ``level`` %: whole MiB, at least 1 MiB."""
    want = capacity * level // 100
    if level >= 100:
        return capacity
    return max(MIB, want - want % MIB) if capacity >= MIB else capacity
