"""Expansion of a plan into its ordered matrix of cells.

Order: for each stage step (fill level; see plan.stages), for each workload, for each load point, for each repeat, every
configuration in turn (A B C A B C …), so that drift of the machine over time
does not masquerade as a difference between configurations. An aging stage's
steps of one configuration follow each other (A A A B B B): they are one
uninterrupted aging of that configuration's data.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Configuration, LoadPoint, Plan, Workload
from .stages import StageStep, stage_steps


@dataclass(frozen=True)
class Cell:
    """One measured window: a configuration × workload × load point, at one repeat."""

    configuration: Configuration
    workload: Workload
    load_point: LoadPoint
    load_index: int
    repeat: int  # 1-based
    stage: StageStep | None = None  # the stage step the cell runs at (fill level), when the plan has one
    age_step: int | None = None  # the step of an aging sequence ([stage.age]), from 0
    age_every: float = 0.0  # seconds per aging step

    @property
    def age_s(self) -> int | None:
        """The data's aging time at this step's start, s (None: not an aging step)."""
        return None if self.age_step is None else int(round(self.age_step * self.age_every))

    @property
    def sequence(self) -> str:
        """The id of the cell without its aging step: every step of one aging sequence shares it."""
        return f"{self.key}__r{self.repeat}"

    @property
    def oio(self) -> int:
        """Outstanding I/Os per stream."""
        return self.load_point.oio_for(self.workload)

    @property
    def streams(self) -> int:
        """Load streams in all (hosts × streams per host)."""
        return self.load_point.hosts * self.load_point.streams

    @property
    def total_oio(self) -> int:
        """Outstanding I/Os in all."""
        return self.streams * self.oio

    @property
    def key(self) -> str:
        """A stable, file-name-safe id of the cell (without the repeat)."""
        lp = self.load_point
        stage = f"__{self.stage.key}" if self.stage is not None else ""
        return f"{self.workload.name}__{self.configuration.name}__h{lp.hosts}s{lp.streams}q{self.oio}{stage}"

    @property
    def id(self) -> str:
        """The cell's id including the repeat (and the aging step)."""
        return self.sequence + (f"__a{self.age_step}" if self.age_step is not None else "")


def expand(plan: Plan) -> list[Cell]:
    """All cells of ``plan`` in run order (configurations interleaved at each load point).

    With adaptive repeats these are the first ``min`` repeats; the session adds more (run.schedule).
    With [stage.age], each cell is an aging sequence: its steps follow each other, nothing between them.
    """
    age = plan.stage.age if plan.stage is not None else None
    every = age.every if age is not None else 0.0
    cells = []
    for stage in stage_steps(plan.method):  # outermost: a fill level changes the data, its cells follow it
        aged = age is None or age.at_fill is None or (stage is not None and stage.value == age.at_fill)
        steps = list(range(age.steps)) if age is not None and aged else [None]
        for workload in plan.workloads:
            for li, lp in enumerate(plan.load_points):
                for repeat in range(1, plan.method.min_repeats + 1):
                    for config in plan.configurations:
                        cells += [Cell(config, workload, lp, li, repeat, stage=stage, age_step=k, age_every=every)
                                  for k in steps]
    return cells
