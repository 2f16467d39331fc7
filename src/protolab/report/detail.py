"""The report's detail charts: latency percentiles and per-second series (a long load ladder gets one chart)."""

from __future__ import annotations

from ..analysis.latency import merged_percentiles
from ..analysis.relative import Row
from ..plan.coordinates import Point
from ..results.records import CellRecord
from .chart import Chart, Series
from .report_data import DETAIL_LOADS, PCT_KEYS, RunData, is_closed_loop, slug


def _merged_percentiles(recs: list[CellRecord]) -> tuple[dict[str, float | None], int]:
    pct, n = merged_percentiles([r.result.read.bins_ns for r in recs] + [r.result.write.bins_ns for r in recs])
    return {k: (v / 1000 if v is not None else None) for k, v in pct.items()}, n


def percentile_charts(data: RunData, workload: str) -> list[Chart]:
    """Latency percentiles merged from fio's histograms: a chart per load point, or p99 at every load point."""
    closed = is_closed_loop(data.plan, workload)
    word = "service time" if closed else "latency"
    loads = sorted({(r.point, r.load_label) for r in data.rows if r.workload == workload})
    merged: dict[tuple[int, str], tuple[dict[str, float | None], int, int]] = {}
    for li, _ in loads:
        for c in data.configurations:
            recs = data.cells.get((workload, li, c))
            if recs:
                pct, n = _merged_percentiles(recs)
                if n:  # no histogram stored: nothing, rather than averaging percentiles
                    merged[(li, c)] = (pct, n, len(recs))
    table = [{"workload": workload, "load point": label, "configuration": c, "repeats": merged[(li, c)][2],
              "I/Os": merged[(li, c)][1], **{f"{k} (µs)": merged[(li, c)][0][k] for k in PCT_KEYS}}
             for li, label in loads for c in data.configurations if (li, c) in merged]
    if not merged:
        return []
    how = "all repeats and jobs merged from fio's histograms (never averaged); µs, log scale"
    if len(loads) > DETAIL_LOADS:  # one chart: p99 at every load point; every percentile in the table
        series = [Series(c, [merged[(li, c)][0]["p99"] if (li, c) in merged else None for li, _ in loads])
                  for c in data.configurations if any((li, c) in merged for li, _ in loads)]
        return [Chart(slug("percentiles", workload), "percentiles-by-load", "percentiles", workload,
                      f"{workload} — p99 {word} at each load point", f"{how}; every percentile in the table",
                      f"p99 {word} (µs)", [label for _, label in loads], series, table, log_y=True)]
    out = []
    for li, label in loads:
        series = [Series(c, [merged[(li, c)][0][k] for k in PCT_KEYS]) for c in data.configurations
                  if (li, c) in merged]
        if series:
            out.append(Chart(slug("percentiles", workload, li.slug), "percentiles", "percentiles", workload,
                             f"{workload} — {word} percentiles at {label}", how, f"{word} (µs)", PCT_KEYS, series,
                             [row for row in table if row["load point"] == label], log_y=True))
    return out


def series_loads(rows: list[Row], workload: str) -> list[Point]:
    """The load points whose per-second series are drawn: all, or a long ladder's highest."""
    loads = sorted({r.point for r in rows if r.workload == workload})
    return loads if len(loads) <= DETAIL_LOADS else loads[-1:]


def series_charts(data: RunData, workload: str) -> list[Chart]:
    """IOPS per second of every repeat at the load points `series_loads` picks."""
    out = []
    step = data.plan.method.interval if data.plan else 1
    loads = sorted({(r.point, r.load_label) for r in data.rows if r.workload == workload})
    wanted = set(series_loads(data.rows, workload))
    shown = [(li, label) for li, label in loads if li in wanted]
    for li, label in shown:
        # an aging sequence's steps are drawn as one series by report.longrun_charts
        recs = [r for c in data.configurations for r in data.cells.get((workload, li, c), [])
                if data.series.get(r.seq, {}).get("all") and "age_s" not in r.coords]
        if not recs:
            continue
        recs.sort(key=lambda r: (data.configurations.index(r.configuration), r.repeat))
        length = max(len(data.series[r.seq]["all"]) for r in recs)
        series, table = [], []
        for r in recs:
            vals = [float(v) for v in data.series[r.seq]["all"]]
            series.append(Series(f"{r.configuration} r{r.repeat}", vals + [None] * (length - len(vals))))
            table.append({"workload": workload, "load point": label, "configuration": r.configuration,
                          "repeat": r.repeat, "seconds": len(vals) * step, "mean IOPS": sum(vals) / len(vals),
                          "min IOPS": min(vals), "max IOPS": max(vals), "steady state": steady_word(r)})
        note = "each repeat's measured window, one line per configuration and repeat"
        if len(shown) < len(loads):
            note += f"; the highest of {len(loads)} load points (every series is in series.csv)"
        out.append(Chart(slug("series", workload, li.slug), "series", "series", workload,
                         f"{workload} — IOPS per {'second' if step == 1 else f'{step} s interval'} at {label}",
                         note, "IOPS", [str((i + 1) * step) for i in range(length)], series, table))
    return out


def steady_word(r: CellRecord) -> str:
    """'yes', or 'no' with the reason (range or slope over the SNIA limit, window too short), or '–'."""
    if r.steady is None:
        return "– (window shorter than the steady-state test's window)"
    if r.steady.steady:
        return "yes"
    return f"no: {r.steady.reason}" if r.steady.reason else "no"
