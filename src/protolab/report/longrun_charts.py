"""The report's long runs: per-interval IOPS and p95 (or the objective's latency) over time, and their sentences.

A long run is a measured window of at least ``LONG_WINDOW_S`` seconds and ``MIN_INTERVALS`` intervals (with a
latency objective, any window of ``MIN_SLO_INTERVALS`` intervals: the objective is judged per interval, whatever
the window's length), or an aging sequence (``[stage.age]``: its steps' windows one after the other, on the time
axis of the aging). An ordinary window of a few minutes is read by the steady-state test, not as a long run. For each:
when it first held steady (SNIA rule), its change per hour with a 95 % interval
(`analysis.trend`, batch means) and, for an aging, the change per hour it could have detected (analysis.claimpower),
and with ``method.slo`` the share of intervals over the objective. The findings
give one sentence per workload, load point and configuration: its repeats pooled (`pooled_sentence`).
Runs of an hour or more get a log-scaled time axis in hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..analysis.claimpower import trend_mdd
from ..analysis.findings import Finding, pct
from ..analysis.trend import SloShare, Trend, onset_s, pooled_trend, slo_share, trend
from ..plan.coordinates import point_of
from ..results.records import CellRecord, SeriesRow
from .chart import Chart, Series
from .report_data import RunData, slug

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
                         f"by batch means of {self.trend.blocks} blocks"
                         + (_could(self.trend.lo, self.trend.hi, self.trend.blocks - 2) if self.aging else ""))
        else:
            parts.append("too few intervals to estimate a change over time")
        if self.slo is not None:
            parts.append(self.slo.sentence())
        return head + "; ".join(parts)


def _could(lo: float, hi: float, df: float) -> str:
    """'; it could have detected a change of ±1.4 %/h (80 % power)' (analysis.claimpower; '' without a figure)."""
    mdd = trend_mdd(lo, hi, df, 1.0)
    if mdd is None:
        return ""
    return f"; it could have detected a change of ±{pct(mdd)} %/h (80 % power)"


def _range(values: list[float], fmt: Callable[[float, float], str]) -> str:
    """'10–13 s' ('10 s' when the repeats agree); ``fmt(value, largest)`` shows every value as the largest's."""
    top = max(values)
    lo, hi = fmt(min(values), top), fmt(top, top)
    if lo == hi:
        return lo
    unit = lo.rsplit(" ", 1)
    return f"{unit[0]}–{hi}" if len(unit) == 2 and hi.endswith(" " + unit[1]) else f"{lo}–{hi}"


def pooled_sentence(runs: list[LongRun], window: int) -> str:
    """One cell's long runs (its repeats, at one workload, load point and configuration) in one sentence: the
    repeats' intervals and span, in how many IOPS held steady and from when, their change per hour pooled
    (analysis.trend.pooled_trend: an interval across repeats, and their spread), the objective's misses summed.
    One repeat: its own sentence."""
    if len(runs) == 1:
        return runs[0].sentence(window)
    first, n = runs[0], len(runs)
    what = "aging of " if first.aging else "long run of "
    counts = _range([float(len(r.rows)) for r in runs], lambda v, _: f"{v:.0f}")
    spans = _range([r.rows[-1].t_s for r in runs], _span)
    head = f"{first.workload}, {what}{first.configuration} at {first.load_label} ({n} repeats of {counts} " \
           f"intervals over {spans}): "
    steady = [r.onset for r in runs if r.onset is not None]
    rule = f"SNIA rule over {window} intervals"
    if not steady:
        parts = [f"IOPS never steady by the {rule} in any repeat"]
    else:
        where = "every repeat" if len(steady) == n else f"{len(steady)} of {n} repeats"
        parts = [f"IOPS steady from {_range(steady, _span)} in {where} ({rule})"]
    having = [r for r in runs if r.trend is not None]
    short = f" ({n - len(having)} of {n} repeats too short to estimate it)" if len(having) < n else ""
    pooled = pooled_trend([r.trend for r in having if r.trend is not None])
    if pooled is None:
        parts.append("too few intervals to estimate a change over time")
    elif len(having) == 1 and having[0].trend is not None:
        t = having[0].trend
        parts.append(f"IOPS{' change ' if t.clear else ': '}{t.sentence()} in repeat {having[0].repeat}, 95 % "
                     f"interval by batch means of {t.blocks} blocks{short}"
                     + (_could(t.lo, t.hi, t.blocks - 2) if first.aging else ""))
    else:
        could = (_could(pooled.lo, pooled.hi, pooled.repeats - 1)
                 if first.aging and pooled.lo is not None and pooled.hi is not None else "")
        parts.append(f"IOPS{' change ' if pooled.clear else ': '}{pooled.sentence()}{short}{could}")
    shares = [r.slo for r in runs if r.slo is not None]
    if shares:
        total = SloShare(shares[0].metric, shares[0].limit_us, sum(x.missed for x in shares),
                         sum(x.intervals for x in shares))
        pcts = [x.pct for x in shares if x.intervals]
        spread = _range(pcts, lambda v, _: f"{v:.1f} %") if pcts else ""
        spread = f"; per repeat {spread}" if "–" in spread else ""
        said = total.sentence().replace(" intervals (", f" intervals of the {len(shares)} repeats (")
        parts.append(f"{said[:-1]}{spread})")
    return head + "; ".join(parts)


def _span(s: float, like: float | None = None) -> str:
    """'20 s', '12.5 min', '8.5 h'; ``like``: in the unit and precision that value would have."""
    ref = s if like is None else like
    if ref >= 7200:
        return f"{s / 3600:.1f} h"
    if ref >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.0f} s" if ref >= 10 else f"{s:.1f} s"  # the jobs' I/O time: 19.999 s reads as 20 s


def long_runs(data: RunData, read: Intervals) -> list[LongRun]:
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


@dataclass(frozen=True)
class LongRunParts:
    """What the long runs give the report: their charts, their sentences and notes, and each (workload,
    configuration)'s trends (for the seed's time claims)."""

    charts: list[Chart] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    trends: dict[tuple[str, str], list[Trend | None]] = field(default_factory=dict)


def long_run_parts(data: RunData, read: Intervals) -> LongRunParts:
    """IOPS and latency over time per workload and load point (p95, or the metric of ``method.slo`` with its
    limit dashed), one finding per workload, load point and configuration (its repeats pooled), and the trends."""
    runs = long_runs(data, read)
    trends: dict[tuple[str, str], list[Trend | None]] = {}
    for r in runs:
        trends.setdefault((r.workload, r.configuration), []).append(r.trend)
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
    cells: dict[tuple, list[LongRun]] = {}
    for r in runs:
        cells.setdefault((r.workload, r.load, r.configuration, r.aging), []).append(r)
    found = [Finding("long run", pooled_sentence(group, window), "iops", group[0].workload,
                     (group[0].configuration,)) for group in cells.values()]
    if any(r.aging for r in runs):  # until the tables know stages, say what their numbers pool
        found.append(Finding("note", "the tables pool the steps of each aging sequence as windows of its cell "
                             "(steps of one aging are not independent repeats): read the aging from its "
                             "change per hour above"))
    return LongRunParts(charts, found + _interrupted(data, read), trends)


def _interrupted(data: RunData, read: Intervals) -> list[Finding]:
    """A note per interrupted window whose intervals are kept in series.csv."""
    measured = {r.seq for r in data.records}
    m = data.manifest
    windows = {w.seq: w for w in [*m.interrupted_windows, *([m.measuring] if m.measuring else [])]
               if w.seq not in measured}
    kept = read(set(windows)) if windows else {}
    out = []
    for seq, w in sorted(windows.items()):
        if kept.get(seq):
            again = any(r.cell_id == w.cell_id and r.seq > seq for r in data.records)
            out.append(Finding("note", f"the window of {w.cell_id} in session {w.session} "
                               f"was interrupted; its {len(kept[seq])} intervals are kept in series.csv "
                               f"(seq {seq}); " + ("it was measured again whole in a later session"
                                                   if again else "'protolab resume' measures it again")))
    return out
