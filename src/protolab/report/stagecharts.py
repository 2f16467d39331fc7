"""The report's stage charts: IOPS and latency against the stage's steps (x = fill level), and their sentences.

The analysis keeps each stage step apart as a coordinate of the rows' point (plan.coordinates);
here the point's outer coordinates are the x axis: one chart per workload and metric, one
line per configuration (and load point, when the plan has several). Each sentence compares
the last step with the first, per configuration and load point, with the report's test
(ratio of medians, bootstrap interval, Welch on logs, Holm over the family, ±noise band), and the smallest
difference that test could have called with 80 % power at the variance seen (analysis.claimpower).
"""

from __future__ import annotations

from ..analysis.batch import compare_many
from ..analysis.claimpower import compared_mdd
from ..analysis.findings import Finding, pct
from ..analysis.stats import HIGHER, LOWER, MIN_REPEATS, NOT_TESTED, decide
from ..plan.coordinates import AXES, outer_steps, value_label
from ..plan.faults import NO_FAULT
from .chart import Chart, Series
from .report_data import RunData, is_closed_loop, slug

_METRICS = {"iops": ("IOPS", "IOPS (median of repeats)", "more", "fewer"),
            "lat_mean_us": ("average service time", "µs (median of repeats)", "higher", "lower")}


def _outer(coords: tuple) -> tuple:
    """A point's outer coordinates but the fault: the faults are no steps to compare (one fault's IOPS against
    another's), the faults section measures each against "none"."""
    return tuple((k, v) for k, v in coords if k != "fault")


def _steps(data: RunData) -> dict[tuple, str]:
    """The points' outer coordinates (stage steps), in order → their label ('fill 25 %'); {} without any."""
    steps = list(dict.fromkeys(o for s in outer_steps(data.records) if (o := _outer(s))))
    return {s: " · ".join(value_label(k, v) for k, v in s) for s in steps}


def _lines(data: RunData, workload: str) -> dict[tuple[str, object], dict[tuple, object]]:
    """(configuration, load point) → stage step → the report row there (rows with a fault left out)."""
    out: dict[tuple[str, object], dict[tuple, object]] = {}
    for r in data.rows:
        if r.workload == workload and _outer(r.point.outer) and r.point.get("fault", NO_FAULT) == NO_FAULT:
            out.setdefault((r.configuration, r.point.get("load")), {})[_outer(r.point.outer)] = r
    return out


def _plain(label: str) -> str:
    return label.split(" · ")[-1]


def stage_charts(data: RunData) -> list[Chart]:
    """Per workload: IOPS and average latency against the stage's steps; [] when the run has no stage."""
    steps = _steps(data)
    if not steps:
        return []
    x = list(steps.values())
    dims = list(dict.fromkeys(k for step in steps for k, _ in step))
    axis = " and ".join(AXES.get(d, d) for d in dims)
    charts = []
    for w in data.workloads:
        lines = _lines(data, w)
        loads = sorted({li for _, li in lines})
        closed = is_closed_loop(data.plan, w)
        for metric, (title, ylabel, _, _) in _METRICS.items():
            if metric == "lat_mean_us" and not closed:
                title = "average latency"
            series, table = [], []
            for c in data.configurations:
                for li in loads:
                    at = lines.get((c, li))
                    if not at:
                        continue
                    some = next(iter(at.values()))
                    name = c if len(loads) == 1 else f"{c} {_plain(some.load_label)}"
                    series.append(Series(name, [at[k].values.get(metric) if k in at else None for k in steps]))
                    for k, label in steps.items():
                        if k in at:
                            table.append({"workload": w, "stage": label, "load point": _plain(at[k].load_label),
                                          "configuration": c, "repeats": at[k].repeats,
                                          f"median {metric}": at[k].values.get(metric)})
            if series:
                charts.append(Chart(slug("stage", metric, w), "stage", "stages", w,
                                    f"{w} — {title} against the {axis}",
                                    "each point: the median of its repeats; the data is not restored between steps",
                                    ylabel, x, series, table))
    return charts


def stage_findings(data: RunData, *, alpha: float = 0.05, noise: float = 0.02) -> list[Finding]:
    """Per workload, configuration and load point: IOPS at the last stage step against the first, tested."""
    steps = _steps(data)
    if len(steps) < 2:
        return []
    first, last = list(steps)[0], list(steps)[-1]
    keys, samples = [], []
    for w in data.workloads:
        for (c, li), at in _lines(data, w).items():
            if first in at and last in at:
                a, b = at[first].samples.get("iops") or [], at[last].samples.get("iops") or []
                if a and b:
                    keys.append((w, c, _plain(at[first].load_label)))
                    samples.append((a, b))
    if not samples:
        return []
    out = []
    comps = compare_many(samples, labels=[str(k) for k in keys], noise=noise)
    verdicts = decide(comps, alpha=alpha, noise=noise)
    seen, tested_at = compared_mdd([x.log_se for x in comps], [x.log_df for x in comps],
                                   [v.p_adjusted for v in verdicts], alpha, noise)
    for (w, c, load), v, mdd in zip(keys, verdicts, seen):
        head = f"{w}: {c} at {load}, IOPS at {steps[last]} against {steps[first]}:"
        if v.verdict == NOT_TESTED:
            text = f"{head} not tested ({v.n_min} repeat{'s' if v.n_min != 1 else ''}; {MIN_REPEATS} needed)."
        elif v.verdict in (HIGHER, LOWER):
            up = v.verdict == HIGHER
            mid, lo, hi = ((v.ratio - 1, v.ci_low - 1, v.ci_high - 1) if up else
                           (1 - v.ratio, 1 - v.ci_high, 1 - v.ci_low))
            text = (f"{head} {pct(100 * mid)} % ({pct(100 * lo)}–{pct(100 * hi)} %) {'more' if up else 'fewer'} "
                    f"({v.interval_name}; corrected p = {v.p_adjusted:.2g}).")
        else:
            text = f"{head} no clear difference ({v.reason})."
        could = ((("iops", mdd, mdd, tested_at, tested_at),)
                 if mdd is not None and v.verdict not in (NOT_TESTED, HIGHER, LOWER) else ())
        if mdd is not None and v.verdict != NOT_TESTED:
            fewer = 100 * (1 - 1 / (1 + mdd / 100))  # the same ratio read downwards
            text = f"{text[:-1]}; it could have detected {pct(fewer)} % fewer or {pct(mdd)} % more (80 % power)."
        out.append(Finding("stage", text, "iops", w, (c,), detectable=could))
    return out
