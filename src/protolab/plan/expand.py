"""Expansion of a plan into its ordered matrix of cells.

Order: for each outer stage step (fill level; see plan.stages), for each workload, for each load point, for each
repeat, every configuration in turn (A B C A B C …), so that drift of the machine over time
does not masquerade as a difference between configurations. An aging stage's
steps of one configuration follow each other (A A A B B B): they are one
uninterrupted aging of that configuration's data.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Configuration, LoadPoint, Plan, Workload
from .stages import Step


@dataclass(frozen=True)
class Cell:
    """One measured window: a configuration × workload × load point, at one repeat, at its stage steps."""

    configuration: Configuration
    workload: Workload
    load_point: LoadPoint
    load_index: int
    repeat: int  # 1-based
    steps: tuple[Step, ...] = ()  # the cell's step of each of the plan's stages, outermost first (plan.stages)

    def step(self, dimension: str) -> Step | None:
        """The cell's step of one stage ('fill', 'age'), if the plan has that stage."""
        return next((s for s in self.steps if s.dimension == dimension), None)

    @property
    def stage(self) -> Step | None:
        """The step whose change of the data the cell follows (a fill level), if any."""
        return next((s for s in self.steps if s.changes_data), None)

    @property
    def continues(self) -> bool:
        """True when the cell goes on from the previous step of its sequence: no restore, no warm-up."""
        return any(s.continues for s in self.steps)

    @property
    def in_sequence(self) -> bool:
        """True when the cell is one step of a sequence measured one after the other (an aging step)."""
        return any(not s.in_key for s in self.steps)

    @property
    def window_s(self) -> float | None:
        """The measured window a stage sets for it (an aging step's every), None for the method's."""
        return next((s.seconds for s in self.steps if s.seconds is not None), None)

    def coords(self) -> dict[str, str | int]:
        """The coordinates its stage steps add (plan.coordinates)."""
        out: dict[str, str | int] = {}
        for s in self.steps:
            out |= s.coords()
        return out

    def region(self, size: int) -> int:
        """The bytes of a target of ``size`` the cell measures on (a fill level: its filled part)."""
        for s in self.steps:
            size = s.region(size)
        return size

    @property
    def sequence(self) -> str:
        """The id of the cell without its sequence step: every step of one aging sequence shares it."""
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
        stage = "".join(f"__{s.key}" for s in self.steps if s.in_key)
        return f"{self.workload.name}__{self.configuration.name}__h{lp.hosts}s{lp.streams}q{self.oio}{stage}"

    @property
    def id(self) -> str:
        """The cell's id including the repeat (and its step of a sequence)."""
        return self.sequence + "".join(f"__{s.key}" for s in self.steps if not s.in_key)


def expand(plan: Plan) -> list[Cell]:
    """All cells of ``plan`` in run order (configurations interleaved at each load point).

    With adaptive repeats these are the first ``min`` repeats; the session adds more (run.schedule).
    The outer stages' steps (fill levels) are the outermost loop; a sequence stage (aging) makes each cell a
    sequence of steps that follow each other, nothing between them.
    """
    cells = []
    for outer in outer_steps(plan):  # outermost: a fill level changes the data, its cells follow it
        seqs: list[tuple[Step, ...]] = [()]
        fill = next((s for s in outer if s.changes_data), None)
        for st in (s for s in plan.stages if s.sequence):
            if st.applies(fill):
                seqs = [(*q, step) for q in seqs for step in st.step_list()]
        for workload in plan.workloads:
            for li, lp in enumerate(plan.load_points):
                for repeat in range(1, plan.method.min_repeats + 1):
                    for config in plan.configurations:
                        cells += [Cell(config, workload, lp, li, repeat, (*outer, *q)) for q in seqs]
    return cells


def outer_steps(plan: Plan) -> list[tuple[Step, ...]]:
    """The outer loops' steps in run order: each swept value (plan.sweep) × each fill level; [()] without any."""
    out: list[tuple[Step, ...]] = [()]
    for st in (s for s in plan.stages if not s.sequence):
        out = [(*o, step) for o in out for step in st.step_list()]
    return out
