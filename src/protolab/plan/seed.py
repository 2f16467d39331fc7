"""A built-in study's seed findings: what the seed document found, set beside what a run measured.

    seed = "S1 TR-3808: FC vs iSCSI vs NFS, 1/10 GbE, MTU 1500/9000"
    [[seed_findings]]
    said = "all protocols were within 9 % of FC's throughput"   # the seed's finding, in its words
    metric = "iops"            # the measured figure set beside it (or a list: ["iops", "cpu_us_per_io_total"])
    compare = "baseline"       # the report's sentences against the baseline ("mtu": MTU pairs; "fill": fill levels;
                               # "time": long runs and aging)
    here = "…"                 # why this machine may not reproduce it (the report adds its bottleneck analysis)

The report's section "The seed beside the measurement" (report.sections.seed) renders them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ..metrics import compared
from . import safety

_Text = Annotated[str, AfterValidator(lambda v: safety.check_text(v, "seed_findings"))]

#: Figures a seed finding can be set beside: the compared metrics (protolab.metrics).
SEED_METRICS = tuple(compared())


class SeedFinding(BaseModel):
    """One finding of the seed document and which measured sentences answer it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    said: _Text = Field(min_length=1, max_length=2000, description="the seed's finding, quoted or summarised")
    metric: Literal[SEED_METRICS] | list[Literal[SEED_METRICS]] = Field(  # type: ignore[valid-type]
        default="iops", description="the measured figure (or figures) set beside it")
    compare: Literal["baseline", "mtu", "fill", "time"] = Field(
        default="baseline", description="which sentences answer it: against the baseline, MTU pairs, fill levels, "
                                        "or over time (long runs and aging: onset, change per hour, objective)")
    workloads: list[str] = Field(default_factory=list, max_length=100,
                                 description="only the sentences about these workloads (default: every workload)")
    here: _Text = Field(default="", max_length=2000,
                        description="why this machine may not reproduce it (the report adds its bottleneck analysis)")

    @property
    def metrics(self) -> list[str]:
        """The figures set beside it."""
        return [self.metric] if isinstance(self.metric, str) else list(self.metric)
