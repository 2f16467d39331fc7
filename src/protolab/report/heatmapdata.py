"""The report's latency heatmaps (plan.heatmap_option): completions per time step × latency row, the colour a count.

One chart per workload and configuration at the chosen point — of those with heatmaps, the one with the most
outstanding I/Os (and of those the last: the highest rate, fill level …) — its repeats added (their windows aligned
at the start); at a point with long runs (report.longrun_charts) one per configuration there too, in their section.
An aging's steps (``[stage.age]``) are placed at their aging time (``age_s``), so
the chart runs over the whole aging, one step's window after another. A faulted window's heatmap is the faults'
latency panel (report.faultdata), not one of these. The stored heatmaps are read by `RunDir`'s caller
(results.heatmapfile.read_heatmaps) and handed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Iterable

from ..analysis.heatmap import added, coarser
from ..plan.coordinates import Point, point_of
from ..results.heatmapfile import Heatmap
from ..results.records import CellRecord
from .chart import Chart, Series
from .longrun_charts import LONG_WINDOW_S, MIN_INTERVALS
from .report_data import RunData, slug

Heatmaps = Callable[[list[str]], dict[str, Heatmap]]
#: An aging's chart has at most this many steps (its windows' steps added in groups): an 800-pixel figure shows no
#: more, and 84 hours of 100 ms steps would be 3 million.
MOST_STEPS = 600

#: The heatmap section's note: how to read them.
HOW = ("each measured window's jobs logged their completion latency histograms every step (fio's log_hist_msec); "
       "a chart shows one configuration at the load point with the most outstanding I/Os, its repeats added: "
       "time across, latency up (8 rows per decade), the colour the I/Os completed in that step and row (log "
       "scale; blank: none). A p99 line hides when the slow I/Os happened; here a stall is a blank column and a "
       "slow phase a band that rises")


def record_heatmaps(records: Iterable[CellRecord], heatmaps: Heatmaps | None) -> dict[str, Heatmap]:
    """The stored heatmaps of these records' windows, by cell id."""
    ids = [r.cell_id for r in records if not r.failed]
    return heatmaps(ids) if heatmaps is not None and ids else {}


def placed(recs: list[tuple[CellRecord, Heatmap]]) -> Heatmap | None:
    """Windows of one configuration at one point: an aging's steps placed at their aging time, repeats added."""
    by_repeat: dict[int, list[tuple[CellRecord, Heatmap]]] = {}
    for r, hm in recs:
        by_repeat.setdefault(r.repeat, []).append((r, hm))
    runs = []
    for items in by_repeat.values():
        if len(items) == 1:
            runs.append(items[0][1])
            continue
        step = items[0][1].step_ms
        if any(hm.step_ms != step for _, hm in items):
            continue
        span = max(float(r.coords.get("age_s", 0)) * 1000.0 + hm.window_ms for r, hm in items)
        factor = max(1, -(-(int(span / step) + 1) // MOST_STEPS))  # a long aging in at most MOST_STEPS steps
        shifted = []
        for r, hm in items:
            pad = int(round(float(r.coords.get("age_s", 0)) * 1000.0 / (step * factor)))
            hm = coarser(hm, factor)
            shifted.append(Heatmap(hm.step_ms, pad * hm.step_ms + hm.window_ms, hm.row0, ((),) * pad + hm.counts,
                                   hm.jobs))
        runs.append(added(shifted))
    return added([h for h in runs if h is not None])


def heatmap_chart(hm: Heatmap, *, cid: str, section: str, workload: str, title: str, note: str,
                  span: tuple[float, float] | None = None, xlabel: str = "second of the measured window") -> Chart:
    """A heatmap as a chart: one series per latency row (its counts per step, at each step's middle), the rows'
    edges in ``edges``; its table, every step and row with a completion."""
    step_s = hm.step_ms / 1000.0
    times = [round((k + 0.5) * step_s, 4) for k in range(len(hm.counts))]
    edges = hm.edges_us()
    series = [Series(f"{edges[i]:.4g}–{edges[i + 1]:.4g} µs",
                     [float(c[i]) if i < len(c) else 0.0 for c in hm.counts], x=times) for i in range(hm.rows)]
    table = [{"t_s": round(k * step_s, 4), "step_s": step_s, "latency_from_us": round(edges[i], 3),
              "latency_to_us": round(edges[i + 1], 3), "ios": n}
             for k, c in enumerate(hm.counts) for i, n in enumerate(c) if n]
    return Chart(id=cid, kind="heatmap", section=section, workload=workload, title=title, note=note,
                 ylabel="completion latency (µs)", x=[], series=series, table=table, log_y=True,
                 xlabel=xlabel, span=span, edges=edges)


def chosen_points(records: list[CellRecord]) -> set[Point]:
    """Per workload, one point: the most outstanding I/Os, and of those the last in the points' order (the highest
    offered rate, fill level, service time …)."""
    best: dict[str, tuple] = {}
    for r in records:
        p = point_of(r)
        key = (r.total_oio, p.order)
        if r.workload not in best or key > best[r.workload][0]:
            best[r.workload] = (key, p)
    return {p for _, p in best.values()}


def is_long(r: CellRecord, interval: float) -> bool:
    """A long run's window (report.longrun_charts' rule) or an aging's step."""
    return r.coords.get("stage") == "age" or (r.result.runtime_s >= LONG_WINDOW_S
                                              and r.result.runtime_s / interval >= MIN_INTERVALS - 0.5)


def heatmap_charts(run: RunData, heatmaps: Heatmaps | None) -> list[Chart]:
    """One chart per workload and configuration at each chosen point (none without stored heatmaps); at a point
    with long runs or an aging, in the long runs' section ("series"), beside their IOPS and latency over time."""
    recs = [r for r in run.records if not r.failed and (r.fault is None or r.fault.kind is None)]
    found = record_heatmaps(recs, heatmaps)
    recs = [r for r in recs if r.cell_id in found]
    if not recs:
        return []
    interval = run.plan.method.interval if run.plan else 1
    long = {(r.workload, point_of(r)) for r in recs if is_long(r, interval)}
    points = chosen_points(recs) | {p for _, p in long}
    out = []
    for w in run.workloads:
        for p in sorted({point_of(r) for r in recs if r.workload == w} & points):
            for c in run.configurations:
                mine = [(r, found[r.cell_id]) for r in recs
                        if r.workload == w and r.configuration == c and point_of(r) == p]
                hm = placed(mine) if mine else None
                if hm is None or not hm.total():
                    continue
                repeats = len({r.repeat for r, _ in mine})
                aging = any("age_s" in r.coords for r, _ in mine)
                out.append(heatmap_chart(
                    hm, cid=slug("heatmap", w, p.slug, c), section="series" if (w, p) in long else "heatmap",
                    workload=w,
                    title=f"{w} · {p.label}: {c}, completion latency per {hm.step_ms / 1000:g} s",
                    note=(f"I/Os completed per step and latency row (8 rows per decade), colour on a log scale; "
                          f"{repeats} repeat{'s' if repeats != 1 else ''} added"
                          + ("; the aging's steps at their aging time" if aging else "")),
                    xlabel="second of the aging" if aging else "second of the measured window"))
    return out
