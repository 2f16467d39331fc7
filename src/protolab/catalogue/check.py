"""`protolab check RUN --against BASELINE`: each acceptance rule (catalogue.rules) at every configuration ×
workload × load point both runs measured, decided with `protolab compare`'s rows (analysis.compare: the baseline =
A, the run = B). A rule is violated only by a *called* change outside its tolerance; a change outside it that the
test does not call holds, and says the smallest change the test could have called (MDD)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.compare import CompareRow, compare_runs, differences
from ..analysis.stats import NOT_TESTED
from ..errors import ProtolabError
from ..metrics import METRICS
from ..results.rundir import RunDir
from .fingerprint import changes, fingerprint, unlike
from .rules import Rule

HOLDS, VIOLATED, UNTESTED = "holds", "violated", "not tested"


@dataclass(frozen=True)
class Outcome:
    """One rule at one configuration, workload and load point."""

    rule: Rule
    row: CompareRow
    status: str  # HOLDS, VIOLATED, UNTESTED

    @property
    def change_pct(self) -> float:
        """The run's median against the baseline's, in % (−12.0: 12 % below)."""
        return self.row.relative - 100.0

    def line(self) -> str:
        """One line naming the rule, the metric, the configuration, the figures and the call."""
        r = self.row
        where = f"configuration {r.configuration}, workload {r.workload}, load {r.load_label}"
        figures = f"{METRICS[r.metric].title} {self.change_pct:+.1f} %"
        if self.status == UNTESTED:
            return f"{self.status}: {self.rule.text()} — {where}: {figures} ({min(r.n_a, r.n_b)} repeats; 3 needed)"
        ci = f"95 % CI {r.ci_low - 100:+.1f} … {r.ci_high - 100:+.1f} %, Holm-corrected p {r.p_adjusted:.3g}"
        call = f"called {r.verdict}" if r.significant else (
            f"no called change (MDD {r.mdd_pct:.1f} %)" if math.isfinite(r.mdd_pct) else "no called change")
        return f"{self.status}: {self.rule.text()} — {where}: {figures} ({ci}; {call})"

    def as_dict(self) -> dict:
        """The outcome as data (`--json`)."""
        r = self.row

        def num(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {"rule": self.rule.text(), "metric": r.metric, "configuration": r.configuration,
                "workload": r.workload, "load": r.load_label, "status": self.status,
                "change_pct": num(self.change_pct), "ci_low_pct": num(r.ci_low - 100),
                "ci_high_pct": num(r.ci_high - 100),
                "p_adjusted": num(r.p_adjusted), "verdict": r.verdict, "mdd_pct": num(r.mdd_pct),
                "median_baseline": r.median_a, "median_run": r.median_b, "repeats": [r.n_a, r.n_b]}


@dataclass(frozen=True)
class CheckResult:
    """Every rule's outcomes for one run against its baseline."""

    run: str
    against: str
    rules_from: str  # "built-in rules" or the rules file
    outcomes: list[Outcome]
    unmeasured: list[str] = field(default_factory=list)  # rules whose metric the two runs do not share
    forced: list[str] = field(default_factory=list)  # what differed and was checked anyway (--force)
    #: what changed of the environment from the baseline's that does not make the runs unlike (the link, the kernel)
    environment: list[str] = field(default_factory=list)

    @property
    def violated(self) -> list[Outcome]:
        """The outcomes that break their rule."""
        return [o for o in self.outcomes if o.status == VIOLATED]

    @property
    def exit_code(self) -> int:
        """1 when a rule is violated, else 0."""
        return 1 if self.violated else 0

    def summary(self) -> str:
        """'check RUN against BASE: 1 of 12 rule checks violated (built-in rules); 10 hold, 1 not tested'."""
        n = {s: sum(1 for o in self.outcomes if o.status == s) for s in (VIOLATED, HOLDS, UNTESTED)}
        text = (f"check {self.run} against {self.against}: {n[VIOLATED]} of {len(self.outcomes)} rule checks "
                f"violated ({self.rules_from}); {n[HOLDS]} hold, {n[UNTESTED]} not tested")
        if self.outcomes and n[UNTESTED] == len(self.outcomes):
            text += " — nothing could be tested (fewer than 3 repeats a side): the check cannot fail"
        return text

    def as_dict(self) -> dict:
        """The result as data (`--json`)."""
        return {"run": self.run, "against": self.against, "rules": self.rules_from, "ok": not self.violated,
                "exit_code": self.exit_code, "violated": len(self.violated),
                "outcomes": [o.as_dict() for o in self.outcomes], "not_measured": self.unmeasured,
                "forced": self.forced, "environment_changed": self.environment}


def _decide(rule: Rule, row: CompareRow) -> str:
    if row.verdict == NOT_TESTED:
        return UNTESTED
    return VIOLATED if row.significant and not rule.holds(row.relative - 100.0) else HOLDS


def check_runs(run: Path, against: Path, rules: list[Rule], rules_from: str, *, force: bool = False) -> CheckResult:
    """Check ``run`` against ``against`` (its baseline) by ``rules``; ProtolabError (exit 2) for unlike runs
    (unless ``force``), runs that measured nothing, or the same run twice."""
    b, a = RunDir.open(run, write=False), RunDir.open(against, write=False)
    what = f"check {b.path} --against {a.path}"
    if a.path.resolve() == b.path.resolve():
        raise ProtolabError(f"{what}: the run and its baseline are the same run directory; give another baseline")
    ma, mb = a.manifest(), b.manifest()
    ra, rb = a.records(), b.records()
    for rd, recs in ((a, ra), (b, rb)):
        if not recs:
            raise ProtolabError(f"{what}: {rd.path} has no measured cells; give a run that measured something")
    fb, fa = fingerprint(mb), fingerprint(ma)
    odd = unlike(fb, fa)
    blocking = [d.text() for d in differences(ma, ra, mb, rb) if d.blocking]
    if (odd or blocking) and not force:
        raise ProtolabError(f"{what}: unlike runs, {'; '.join([*odd, *blocking])}; pass --force to check the cells "
                            "they share anyway")
    metrics = list(dict.fromkeys(r.metric for r in rules))
    rows = compare_runs(ra, rb, metrics)
    if not rows:
        raise ProtolabError(f"{what}: the runs share no measured cell (workload, load point and configuration) for "
                            f"the rules' metrics ({', '.join(metrics)}); nothing to check")
    outcomes = [Outcome(rule, row, _decide(rule, row)) for rule in rules for row in rows if row.metric == rule.metric]
    measured = {r.metric for r in rows}
    unmeasured = [rule.text() for rule in rules if rule.metric not in measured]
    return CheckResult(b.run_id, a.run_id, rules_from, outcomes, unmeasured, [*odd, *blocking] if force else [],
                       changes(fb, fa))
