"""The report's long runs: per-interval IOPS and p95 (or the objective's latency) over time, and their sentences.

A long run is a measured window of at least ``LONG_WINDOW_S`` seconds and ``MIN_INTERVALS`` intervals (with a
latency objective, any window of ``MIN_SLO_INTERVALS`` intervals: the objective is judged per interval, whatever
the window's length), or an aging sequence (``[stage.age]``: its steps' windows one after the other, on the time
axis of the aging). An ordinary window of a few minutes is read by the steady-state test, not as a long run. For each:
when it first held steady (SNIA rule), its change per hour with a 95 % interval
(`analysis.trend`, batch means), and with ``method.slo`` the share of intervals over the objective.
Runs of an hour or more get a log-scaled time axis in hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..analysis.findings import Finding
from ..analysis.trend import SloShare, Trend, onset_s, slo_share, trend
from ..plan.coordinates import point_of
from ..results.records import CellRecord, SeriesRow
from .model import Chart, ReportData, Series, slug

#: A window with at least this many intervals, lasting at least LONG_WINDOW_S, is drawn and read as a long run.
MIN_INTERVALS = 20
LONG_WINDOW_S = 600.0
#: … and with ``method.slo``, a window of this many: the plan asks for every interval against its objective.
MIN_SLO_INTERVALS = 5
#: From this span on, the time axis is in hours, log-scaled.
LOG_FROM_S = 3600.0

Intervals = Callable[[set[int]], dict[int, list[SeriesRow]]]


@dataclass
class LongRun:
    """One long run's merged series and what is read from it."""

    workload: str
    configuration: str
    load: int
    load_label: str
    repeat: int
    aging: bool
    rows: list[SeriesRow]
    onset: float | None
    trend: Trend | None
    slo: SloShare | None

    @property
    def name(self) -> str:
        """'nbd r1' (a chart's series; the configuration gives its colour)."""
        return f"{self.configuration} r{self.repeat}"

    def sentence(self, window: int) -> str:
        """The long run in words."""
        what = "aging of " if self.aging else "long run of "
        span = self.rows[-1].t_s  # a window's series, and an aging sequence's, start at 0
        head = f"{self.workload}, {what}{self.configuration} at {self.load_label} (repeat {self.repeat}, " \
               f"{len(self.rows)} intervals over {_span(span)}): "
        parts = [f"IOPS steady from {_span(self.onset)} (SNIA rule over {window} intervals)" if self.onset is not None
                 else f"IOPS never steady by the SNIA rule over {window} intervals"]
        if self.trend is not None:
            parts.append(f"IOPS{' change ' if self.trend.clear else ': '}{self.trend.sentence()}, 95 % interval "
                         f"by batch means of {self.trend.blocks} blocks")
        else:
            parts.append("too few intervals to estimate a change over time")
        if self.slo is not None:
            parts.append(self.slo.sentence())
        return head + "; ".join(parts)


def _span(s: float) -> str:
    if s >= 7200:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"  # the jobs' I/O time: 19.999 s reads as 20 s


def long_runs(data: ReportData, read: Intervals) -> list[LongRun]:
    """Every long run of the report's records, in the order the plan names them."""
    plan = data.plan
    interval = plan.method.interval if plan else 1
    window = plan.method.steady_window if plan else 5
    slo = plan.method.slo if plan else None
    labels = {(r.workload, r.point): r.load_label for r in data.rows}
    groups: dict[tuple, list[CellRecord]] = {}
    for r in data.records:
        aging = r.coords.get("stage") == "age"
        intervals = r.result.runtime_s / interval
        long = r.result.runtime_s >= LONG_WINDOW_S and intervals >= MIN_INTERVALS - 0.5
        if aging or long or (slo is not None and intervals >= MIN_SLO_INTERVALS - 0.5):
            key = (r.workload, point_of(r), r.configuration, r.repeat, aging, None if aging else r.seq)
            groups.setdefault(key, []).append(r)
    if not groups:
        return []
    rows = read({r.seq for recs in groups.values() for r in recs})
    out = []
    for (w, li, c, rep, aging, _), recs in groups.items():
        recs.sort(key=lambda r: int(r.coords.get("age_s", 0)))
        series = [row for r in recs for row in rows.get(r.seq, [])]
        if len(series) < 2:
            continue
        iops = [row.iops for row in series]
        share = None
        if slo is not None:
            share = slo_share([getattr(row, f"lat_{slo.metric}_us") for row in series], slo.metric, slo.limit_us)
        out.append(LongRun(w, c, li, labels.get((w, li), str(li)), rep, aging, series,
                           onset_s(iops, interval, window=window, times=[row.t_s for row in series]),
                           trend([row.t_s for row in series], iops), share))
    order = {c: i for i, c in enumerate(data.configurations)}
    out.sort(key=lambda x: (data.workloads.index(x.workload) if x.workload in data.workloads else 0, x.load,
                            order.get(x.configuration, 0), x.repeat))
    return out


def _chart(runs: list[LongRun], workload: str, label: str, metric: str, limit: float | None) -> Chart:
    span = max(r.rows[-1].t_s for r in runs)
    hours = span >= LOG_FROM_S
    scale = 3600.0 if hours else 1.0
    series = [Series(r.name, [getattr(row, metric) for row in r.rows], x=[row.t_s / scale for row in r.rows])
              for r in runs]
    table = [{"workload": r.workload, "load point": r.load_label, "configuration": r.configuration,
              "repeat": r.repeat, "aging": int(r.aging), "intervals": len(r.rows),
              "steady from s": r.onset, "change %/h": None if r.trend is None else round(r.trend.pct_per_h, 3),
              "change low": None if r.trend is None else round(r.trend.lo, 3),
              "change high": None if r.trend is None else round(r.trend.hi, 3),
              "SLO missed": None if r.slo is None else r.slo.missed} for r in runs]
    what = "IOPS" if metric == "iops" else f"{metric.split('_')[1]} latency (µs)"
    note = "merged over every job and host, one point per interval"
    if limit is not None and metric != "iops":
        note += f"; dashed: the objective ({limit / 1000:g} ms)" if limit >= 1000 else \
            f"; dashed: the objective ({limit:.4g} µs)"
    return Chart(slug("longrun", metric, workload, label), "timeseries", "series", workload,
                 f"{workload} — {what} over time at {label}", note, what, [], series, table,
                 log_y=metric != "iops", log_x=hours,
                 xlabel="hours (log scale)" if hours else "seconds", hline=limit if metric != "iops" else None)


def long_run_charts(data: ReportData, read: Intervals) -> list[Chart]:
    """IOPS and latency over time per workload and load point (p95, or the metric of ``method.slo`` with its
    limit dashed), and one finding per long run."""
    runs = long_runs(data, read)
    for r in runs:
        data.trends.setdefault((r.workload, r.configuration), []).append(r.trend)
    plan = data.plan
    window = plan.method.steady_window if plan else 5
    slo = plan.method.slo if plan else None
    limit = slo.limit_us if slo is not None else None
    lat = f"lat_{slo.metric}_us" if slo is not None else "lat_p95_us"
    charts = []
    for (w, li) in dict.fromkeys((r.workload, r.load) for r in runs):
        group = [r for r in runs if (r.workload, r.load) == (w, li)]
        charts.append(_chart(group, w, group[0].load_label, "iops", None))
        if any(getattr(row, lat) is not None for r in group for row in r.rows):
            charts.append(_chart(group, w, group[0].load_label, lat, limit))
    data.findings += [Finding("long run", r.sentence(window), "iops", r.workload, (r.configuration,)) for r in runs]
    if any(r.aging for r in runs):  # until the tables know stages, say what their numbers pool
        data.findings.append(Finding("note", "the tables pool the steps of each aging sequence as windows of its cell "
                                     "(steps of one aging are not independent repeats): read the aging from its "
                                     "change per hour above"))
    measured = {r.seq for r in data.records}
    m = data.manifest
    windows = {w.seq: w for w in [*m.interrupted_windows, *([m.measuring] if m.measuring else [])]
               if w.seq not in measured}
    kept = read(set(windows)) if windows else {}
    for seq, w in sorted(windows.items()):
        if kept.get(seq):
            again = any(r.cell_id == w.cell_id and r.seq > seq for r in data.records)
            data.findings.append(Finding("note", f"the window of {w.cell_id} in session {w.session} "
                                         f"was interrupted; its {len(kept[seq])} intervals are kept in series.csv "
                                         f"(seq {seq}); " + ("it was measured again whole in a later session"
                                                             if again else "'protolab resume' measures it again")))
    return charts
