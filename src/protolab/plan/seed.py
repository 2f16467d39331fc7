"""A built-in study's seed findings: what the seed document found, as a claim the report tests against the run.

    seed = "S1 TR-3808: FC vs iSCSI vs NFS, 1/10 GbE, MTU 1500/9000"
    [[seed_findings]]
    section = "§2.2"           # where the seed says it
    said = "All protocols were within 9 % of FC's throughput."   # the seed's finding, in its words
    metric = "iops"            # the figure it is about (or a list: ["iops", "cpu_us_per_io_total"])
    compare = "baseline"       # what is set against what: the baseline ("baseline"), each configuration's
                               # MTU pair ("mtu"), the first and last fill level ("fill"), time ("time")
    claims = [{ within = 9 }]  # the finding as data: every configuration within ±9 % of the baseline's IOPS

A claim (`Claim`) names its subjects (configuration names or `fnmatch` patterns; default every configuration
but the reference), the reference (`compare = "baseline"`: the plan's baseline or a named configuration;
`"mtu"`: the same configuration at the smaller MTU; `"fill"`: the same configuration at the first fill level;
`"time"`: the start of the same long run, over the claim's `horizon` or, without one, the long run's whole span),
the metric, and what the seed found: a band of the relative change
in % (`at_least`, `at_most`, or `within` for ±), or `better = true` / `worse = true` (a difference the test
calls, in the metric's better or worse direction). A list of metrics means "any of them" ("more IOPS or a lower p99").
A band is the seed's own number (`band_source = "seed"`) unless the seed gives none ("comparable", "the same"): then
it is protolab's reading of the words (`band_source = "protolab"`), and the report says so. A finding this lab cannot
test (a hypervisor version, a link type it has no counterpart of) has no claims and `untestable = "why"`; the report
shows "not testable here: why". A claim about one array layout (`layout = "copy-on-write"` or `"in-place"`) is judged
only on a run whose pool has it (lab.cow).
`analysis.claims` computes each claim's verdict from the run's own data (reproduced, not reproduced, opposite,
inconclusive, not testable here), with the figures, intervals and, where it was not reproduced, what the
bottleneck analysis found (report.sections.seed_section shows them). Nothing in a plan says whether, or why, a
claim holds.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..metrics import METRICS, compared
from . import safety
from .units import parse_duration

_Text = Annotated[str, AfterValidator(lambda v: safety.check_text(v, "seed_findings"))]

#: Figures a seed finding can be about: the compared metrics (protolab.metrics).
SEED_METRICS = tuple(compared())
#: Figures a claim can test: every registered metric.
CLAIM_METRICS = tuple(METRICS)
Compare = Literal["baseline", "mtu", "fill", "time"]


class Claim(BaseModel):
    """One testable statement of a seed finding (see the module's text)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    metric: Literal[CLAIM_METRICS] | list[Literal[CLAIM_METRICS]] | None = Field(  # type: ignore[valid-type]
        default=None, description="the figure tested (default: the finding's only metric); a list: any of them")
    subjects: list[Annotated[str, AfterValidator(lambda v: safety.check_text(v, "seed_findings.claims"))]] = \
        Field(default_factory=list, max_length=50,
              description="configurations (names or fnmatch patterns) the claim is about; default: all")
    reference: str | None = Field(default=None, max_length=200,
                                  description="compare = 'baseline': the configuration they are set against "
                                              "(default: the plan's baseline)")
    at_least: float | None = Field(default=None, ge=-100, le=10_000, description="the change is at least this (%)")
    at_most: float | None = Field(default=None, ge=-100, le=10_000, description="the change is at most this (%)")
    within: float | None = Field(default=None, gt=0, le=100, description="the change lies within ± this (%)")
    better: bool = Field(default=False, description="a difference the test calls, in the metric's better direction")
    worse: bool = Field(default=False, description="a difference the test calls, in the metric's worse direction")
    horizon: str | None = Field(default=None, max_length=20,
                                description="compare = 'time': the time the seed's change took ('24h')")
    layout: Literal["copy-on-write", "in-place"] | None = Field(
        default=None, description="only on a run whose pool has this layout (lab.cow); another run: not testable")
    band_source: Literal["seed", "protolab"] = Field(
        default="seed", description="whose number the band is: the seed's, or protolab's reading of words that "
                                    "give none ('comparable')")

    @model_validator(mode="after")
    def _one_statement(self) -> "Claim":
        band = self.at_least is not None or self.at_most is not None
        if sum((band, self.within is not None, self.better, self.worse)) != 1:
            raise ValueError("seed_findings.claims: give exactly one of a band (at_least and/or at_most), "
                             "within, better = true or worse = true")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise ValueError(f"seed_findings.claims: at_least ({self.at_least}) is above at_most ({self.at_most})")
        if self.horizon is not None:
            try:
                parse_duration(self.horizon)
            except ValueError as e:
                raise ValueError(f"seed_findings.claims.horizon: {e}") from None
        return self

    @property
    def band(self) -> tuple[float | None, float | None]:
        """(low, high) of the claimed change in %, either open (None); (None, None) for `better` and `worse`."""
        if self.within is not None:
            return -self.within, self.within
        return self.at_least, self.at_most

    @property
    def horizon_s(self) -> float | None:
        """The horizon in seconds, when given."""
        return None if self.horizon is None else parse_duration(self.horizon)


class SeedFinding(BaseModel):
    """One finding of the seed document and the claims that test it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    said: _Text = Field(min_length=1, max_length=2000, description="the seed's finding, quoted or summarised")
    section: str | None = Field(default=None, max_length=40,
                                description="where the seed says it ('§8.1'; a blog without sections: its heading)")
    untestable: _Text | None = Field(default=None, min_length=1, max_length=300,
                                     description="why this lab cannot test the finding, in one line (no claims then)")
    metric: Literal[SEED_METRICS] | list[Literal[SEED_METRICS]] = Field(  # type: ignore[valid-type]
        default="iops", description="the measured figure (or figures) it is about")
    compare: Compare = Field(
        default="baseline", description="what is set against what: the baseline, MTU pairs, fill levels, or time "
                                        "(long runs and aging)")
    workloads: list[str] = Field(default_factory=list, max_length=100,
                                 description="only these workloads (default: every workload)")
    claims: list[Claim] = Field(default_factory=list, max_length=20,
                                description="the finding as testable data (analysis.claims computes the verdict)")

    @model_validator(mode="before")
    @classmethod
    def _no_excuse(cls, data: object) -> object:
        # older plans (and the plan text kept in their run directories) gave a typed excuse, `here`; it is read and
        # ignored, so such a run still resumes: the report now computes what held the cells back
        if isinstance(data, dict) and "here" in data:
            data = {k: v for k, v in data.items() if k != "here"}
        return data

    @model_validator(mode="after")
    def _claims_name_a_metric(self) -> "SeedFinding":
        if len(self.metrics) > 1 and any(c.metric is None for c in self.claims):
            raise ValueError("seed_findings.claims: the finding names several metrics; give each claim its metric")
        if self.compare != "baseline" and any(c.reference is not None for c in self.claims):
            raise ValueError(f"seed_findings.claims.reference: only with compare = 'baseline' (compare = "
                             f"'{self.compare}' sets each configuration against its own)")
        if self.untestable is not None and self.claims:
            raise ValueError("seed_findings: a finding with `untestable` has no claims (it says why none is tested)")
        return self

    @property
    def metrics(self) -> list[str]:
        """The figures it is about."""
        return [self.metric] if isinstance(self.metric, str) else list(self.metric)

    def claim_metrics(self, claim: Claim) -> list[str]:
        """The figures one of its claims tests (any of them)."""
        m = claim.metric if claim.metric is not None else self.metrics[0]
        return [m] if isinstance(m, str) else list(m)


def check_seed_findings(findings: list[SeedFinding], workloads: list[str], configurations: list[str]) -> None:
    """ValueError when a seed finding names a workload, or a claim a configuration, that the plan lacks."""
    import fnmatch

    for f in findings:
        if set(f.workloads) - set(workloads):
            raise ValueError(f"seed_findings: workload(s) {', '.join(sorted(set(f.workloads) - set(workloads)))} "
                             f"are not in the plan; choose from: {', '.join(workloads)}")
        for c in f.claims:
            unmatched = [p for p in c.subjects if not fnmatch.filter(configurations, p)]
            if unmatched or (c.reference is not None and c.reference not in configurations):
                raise ValueError(f"seed_findings.claims: {', '.join(unmatched) or c.reference} names no "
                                 f"configuration; choose from: {', '.join(configurations)}")
