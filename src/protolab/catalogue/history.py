"""`protolab history`'s model: the runs of one study, oldest first, with their environment, and per configuration
(workload × load point × configuration) each headline figure's median per run and its change from the run before.

A change is called only as `protolab compare` calls one (analysis.compare: Welch's test on log values, Holm-corrected
per metric over the cells the two runs share, the 95 % bootstrap interval outside the ±2 % noise band); otherwise it
is "no called change" with the smallest change that test could have called (MDD, 80 % power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median

from ..analysis.compare import CompareRow, compare_samples
from ..analysis.stats import MIN_REPEATS, NOT_TESTED
from ..metrics import METRICS
from .fingerprint import changed
from .index import HEADLINE, Catalogue, RunEntry


@dataclass(frozen=True)
class Change:
    """One figure's change from the run before, as the comparison called it."""

    change_pct: float  # 100 × (ratio of medians − 1)
    called: bool
    verdict: str  # "higher", "lower", "no clear difference", "not tested"
    mdd_pct: float = math.nan  # the smallest change the test could have called (no called change only)
    n_min: int = 0

    def text(self) -> str:
        """'-8.1 % (called)', 'no called change (MDD 6.2 %)' or 'no called change (not tested: 2 repeats)'."""
        if self.called:
            return f"{self.change_pct:+.1f} % (called)"
        if self.verdict == NOT_TESTED:
            return f"no called change (not tested: {self.n_min} repeat{'s' if self.n_min != 1 else ''}, " \
                   f"{MIN_REPEATS} needed)"
        return f"no called change (MDD {self.mdd_pct:.1f} %)" if math.isfinite(self.mdd_pct) else \
            "no called change"


@dataclass(frozen=True)
class Step:
    """One run of a series: each figure's median and its change from the run before (none for the first)."""

    run_id: str
    medians: dict[str, float]
    repeats: int
    changes: dict[str, Change] = field(default_factory=dict)


@dataclass(frozen=True)
class Line:
    """One configuration at one workload and load point, over the runs that measured it."""

    workload: str
    load: str
    configuration: str
    steps: list[Step]

    @property
    def name(self) -> str:
        """'iscsi · 1×1×4=4'."""
        return f"{self.configuration} · {self.load}"


@dataclass(frozen=True)
class History:
    """The runs of one study and its lines."""

    plan: str
    runs: list[RunEntry]
    env_changed: dict[str, list[str]]  # run id → the environment fields that differ from the run before
    metrics: list[str]  # the headline figures measured in at least one run
    lines: list[Line]

    def called(self) -> list[tuple[Line, Step, str]]:
        """Every called change: (line, the run it was called at, metric)."""
        return [(ln, s, m) for ln in self.lines for s in ln.steps for m, c in s.changes.items() if c.called]


def _change(row: CompareRow) -> Change:
    return Change(row.relative - 100.0, row.significant, row.verdict, row.mdd_pct, min(row.n_a, row.n_b))


def build_history(cat: Catalogue, plan: str) -> History:
    """The history of ``plan`` from the catalogue."""
    runs = cat.runs(plan)
    samples = {r.run_id: cat.samples(r.run_id) for r in runs}
    metrics = [m for m in HEADLINE if any(m in s and any(s[m].values()) for s in samples.values())]
    steps: dict[tuple[str, str, str], list[Step]] = {}
    order: dict[tuple[str, str, str], tuple[int, int, int]] = {}
    before = None
    for i, run in enumerate(runs):
        now = samples[run.run_id]
        rows = compare_samples({m: before[m] for m in metrics if m in before}, now) if before is not None else []
        by = {(r.workload, r.load_label, r.configuration, r.metric): r for r in rows}
        ranks = cat.point_ranks(run.run_id)
        cells = list(dict.fromkeys(c for m in metrics for c, v in now.get(m, {}).items() if v))
        for n, cell in enumerate(cells):
            medians = {m: median(now[m][cell]) for m in metrics if now.get(m, {}).get(cell)}
            changes = {m: _change(by[(*cell, m)]) for m in metrics if (*cell, m) in by}
            reps = max(len(now[m][cell]) for m in medians)
            steps.setdefault(cell, []).append(Step(run.run_id, medians, reps, changes))
            order[cell] = (order.get(cell, (i, 0, 0))[0], ranks.get(cell[:2], 0), n)
        before = now
    lines = [Line(w, p, c, steps[(w, p, c)]) for (w, p, c) in sorted(steps, key=lambda k: (k[0], order[k][1:]))]
    env_changed = {b.run_id: changed(a.env, b.env) for a, b in zip(runs, runs[1:])}
    return History(plan, runs, env_changed, metrics, lines)


def history_json(h: History) -> dict:
    """The history as data (`protolab history --json`)."""
    def num(v: float) -> float | None:
        return v if math.isfinite(v) else None

    return {
        "plan": h.plan,
        "runs": [{"run": r.run_id, "started": r.started, "status": r.status, "cells": r.cells,
                  "environment": r.env.as_dict(), "environment_changed": h.env_changed.get(r.run_id, [])}
                 for r in h.runs],
        "metrics": {m: METRICS[m].unit for m in h.metrics},
        "lines": [{"workload": ln.workload, "load": ln.load, "configuration": ln.configuration,
                   "runs": [{"run": s.run_id, "repeats": s.repeats, "medians": s.medians,
                             "changes": {m: {"change_pct": num(c.change_pct), "called": c.called,
                                             "verdict": c.verdict, "mdd_pct": num(c.mdd_pct), "text": c.text()}
                                         for m, c in s.changes.items()}} for s in ln.steps]}
                  for ln in h.lines],
    }
