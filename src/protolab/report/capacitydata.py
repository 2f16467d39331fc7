"""The capacity ladder's figures (analysis.capacity, `model.CapacityData`), computed once when the report's data is
built, and its charts: per workload and point, the objective's latency percentile and the mean latency against the
achieved IOPS, one line per configuration, each point a step's median over its repeats. report.sections.capacity_section
puts them in words."""

from __future__ import annotations

from statistics import median

from ..analysis.capacity import Ladder, Step, floor_share, kept_up, ladders, meets
from .chart import Chart, Series
from .report_data import CapacityData, RunData, slug


def capacity_data(run: RunData, saturation: dict[tuple[str, str], float] | None = None
                  ) -> tuple[CapacityData | None, list[Chart]]:
    """The run's capacity figures and charts; (None, []) without a ladder in the plan. ``saturation``: the lab's
    device model's IOPS at saturation per (workload, configuration), said beside the figures."""
    cap = getattr(run.plan, "capacity", None) if run.plan is not None else None
    if cap is None:
        return None, []
    slo = cap.slo
    found = ladders(run.records, ladder=cap.ladder, percentile_key=slo.key, limit_us=slo.under_us, refine=cap.refine,
                    alpha=run.alpha)
    data = CapacityData(slo.summary(), slo.under_us, slo.key, cap.arrivals, cap.refine, found, dict(saturation or {}))
    return data, charts(data, run.alpha)


def _med(values) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None


def step_rows(g: Ladder, data: CapacityData, alpha: float) -> list[dict]:
    """One row per step of a ladder: offered and achieved IOPS, the latencies, in how many repeats it kept up and met
    the objective."""
    floor = floor_share(g.steps)

    def count(s: Step, ok) -> str:
        return f"{sum(ok(r) for r in range(len(s.repeats)))}/{len(s.repeats)}"

    return [{"workload": g.workload, "point": g.label, "configuration": g.configuration, "offered IOPS": s.offered,
             "achieved IOPS (median)": median(s.achieved), "mean latency (µs)": median(s.latency_us),
             f"{data.percentile} (µs)": _med(s.objective_us), "repeats": len(s.repeats),
             "kept up": count(s, lambda r: kept_up(s.offered, s.ios[r], s.seconds[r], alpha, floor)),
             f"meets {data.objective}": count(s, lambda r: meets(s, data.limit_us, alpha, r, floor)),
             "step": "search" if s.refined else "ladder"} for s in g.steps]


def charts(data: CapacityData, alpha: float) -> list[Chart]:
    """Per workload and point: the objective's percentile and the mean latency against achieved IOPS."""
    groups: dict[tuple, list[Ladder]] = {}
    for g in data.ladders:
        groups.setdefault((g.workload, g.outer), []).append(g)
    out = []
    for (workload, _), gs in groups.items():
        label = gs[0].label
        rows = [row for g in gs for row in step_rows(g, data, alpha)]
        x = {g.configuration: [median(s.achieved) for s in g.steps] for g in gs}
        pct = [Series(g.configuration, [_med(s.objective_us) for s in g.steps], x=x[g.configuration]) for g in gs]
        mean = [Series(g.configuration, [median(s.latency_us) for s in g.steps], x=x[g.configuration]) for g in gs]
        xlabel = "achieved IOPS (median of the repeats)"
        out.append(Chart(slug("capacity", data.percentile, workload, label), "xy", "capacity", workload,
                         f"{workload} · {label} — {data.percentile} latency against achieved IOPS",
                         f"each point a step of the ladder (offered rate, {data.arrivals} arrivals), its median over "
                         f"repeats; dashed: the objective {data.objective}", f"{data.percentile} latency (µs)", [],
                         pct, rows, log_y=True, xlabel=xlabel, hline=data.limit_us))
        out.append(Chart(slug("capacity", "mean", workload, label), "xy", "capacity", workload,
                         f"{workload} · {label} — mean latency against achieved IOPS",
                         "each point a step's median over repeats; the knee is where it leaves the lowest step's "
                         "interval for good", "mean latency (µs)", [], mean, rows, log_y=True, xlabel=xlabel))
    return out


def _num(v: float | None) -> float | None:
    return None if v is None or v != v else v  # NaN (no interval) is no JSON number


def capacity_json(data: CapacityData | None, alpha: float) -> list[dict] | None:
    """`report --json`'s capacity: per ladder its knee, its capacity with the interval, and every step."""
    if data is None:
        return None
    out = []
    for g in data.ladders:
        k, c = g.knee, g.capacity
        out.append({
            "workload": g.workload, "configuration": g.configuration, "point": dict(g.outer), "label": g.label,
            "objective": data.objective,
            "knee": None if k is None else {"offered": k.offered, "achieved": k.achieved, "below": k.below,
                                            "floor_us": list(k.floor_us), "at_us": list(k.at_us)},
            "capacity": None if c is None else {
                "iops": c.value, "low": _num(c.low), "high": _num(c.high), "coverage": _num(c.coverage),
                "per_repeat": list(c.per_repeat), "next_step": c.next_step, "at_least": c.above,
                "below_ladder": c.below},
            "steps": [{"offered": r["offered IOPS"], "achieved": r["achieved IOPS (median)"],
                       "lat_mean_us": r["mean latency (µs)"], f"lat_{data.percentile}_us": r[f"{data.percentile} (µs)"],
                       "repeats": r["repeats"], "kept_up": int(r["kept up"].split("/")[0]),
                       "meets": int(r[f"meets {data.objective}"].split("/")[0]), "search": r["step"] == "search"}
                      for r in step_rows(g, data, alpha)]})
    return out
