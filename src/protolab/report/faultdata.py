"""The faults' figures (analysis.fault_figures, `report_data.FaultData`), computed once when the report's data is built,
and their timelines: per workload and point of a fault, IOPS and the mean completion latency per 100 ms of the
measured window, one line per configuration and repeat, the fault's time shaded. report.sections.faults_section
puts them in words and tables."""

from __future__ import annotations

import math

from ..analysis.fault_figures import rows, sentences
from ..plan.coordinates import point_of
from ..results.heatmapfile import Heatmap
from ..results.records import CellRecord
from .chart import Chart, Series
from .heatmapdata import Heatmaps, heatmap_chart, placed, record_heatmaps
from .report_data import FaultData, RunData, slug

#: The timelines' step: ten of the 10 ms bins.
CHART_MS = 100


def fault_data(run: RunData, heatmaps: Heatmaps | None = None) -> tuple[FaultData | None, list[Chart]]:
    """The run's fault figures and timelines; (None, []) when no record has a fault's timeline. ``heatmaps``: the
    windows' stored latency heatmaps (plan.heatmap_option), which become the timelines' latency panels."""
    faulted = [r for r in run.records if r.fault is not None and r.fault.iops and not r.failed]
    if not faulted:
        return None, []
    found = rows(faulted)
    return FaultData(found, sentences(found)), charts(faulted, record_heatmaps(faulted, heatmaps))


def _iops_per(rec: CellRecord) -> tuple[list[float], list[float]]:
    fw = rec.fault
    assert fw is not None
    k = max(1, CHART_MS // fw.step_ms)
    values = [sum(fw.iops[i:i + k]) / len(fw.iops[i:i + k]) for i in range(0, len(fw.iops), k)]
    return [round((i + 1) * CHART_MS / 1000.0, 3) for i in range(len(values))], values


def charts(records: list[CellRecord], heatmaps: dict[str, Heatmap] | None = None) -> list[Chart]:
    """Per workload and point with a fault: IOPS, then mean latency, per 100 ms; each configuration's repeats. Where
    the windows have latency heatmaps (``heatmaps``, by cell id), the latency panel is one heatmap per configuration,
    its repeats added."""
    heatmaps = heatmaps or {}
    groups: dict[tuple, list[CellRecord]] = {}
    for r in records:
        if r.fault is not None and r.fault.kind is not None:
            groups.setdefault((r.workload, point_of(r)), []).append(r)
    out = []
    for (workload, point), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        recs.sort(key=lambda r: (r.configuration, r.repeat))
        fw = recs[0].fault
        assert fw is not None
        span = fw.span_s()
        iops, lat, table = [], [], []
        for r in recs:
            x, values = _iops_per(r)
            lat_us = list(r.fault.lat_us) if r.fault is not None else []
            name = f"{r.configuration} r{r.repeat}"
            iops.append(Series(name, [round(v, 1) for v in values], x=x))
            lat.append(Series(name, lat_us[:len(x)], x=x[:len(lat_us)]))
            table += [{"configuration": r.configuration, "repeat": r.repeat, "t_s": t, "iops": round(v, 1),
                       "lat_mean_us": lat_us[i] if i < len(lat_us) else None}
                      for i, (t, v) in enumerate(zip(x, values))]
        what = f"{fw.fault} ({fw.kind}, {fw.at_s:g} s + {fw.duration_s:g} s)"
        base = slug("fault", workload, point.slug)
        common = dict(section="faults", workload=workload, x=[], table=table, xlabel="second of the measured window",
                      span=span)
        out.append(Chart(id=f"{base}-iops", kind="timeseries", title=f"{workload} · {point.label}: IOPS per 100 ms "
                         f"around {what}", note="the fault's time shaded", ylabel="IOPS", series=iops, **common))
        maps = {c: placed([(r, heatmaps[r.cell_id]) for r in recs if r.configuration == c and r.cell_id in heatmaps])
                for c in dict.fromkeys(r.configuration for r in recs)}
        if any(m is not None and m.total() for m in maps.values()):
            for c, hm in maps.items():
                if hm is not None and hm.total():
                    n = sum(1 for r in recs if r.configuration == c and r.cell_id in heatmaps)
                    out.append(heatmap_chart(hm, cid=slug(base, c, "heatmap"), section="faults", workload=workload,
                                             title=f"{workload} · {point.label}: {c}, completion latency per "
                                             f"{hm.step_ms / 1000:g} s around {what}",
                                             note=f"the fault's time hatched; {n} repeat{'s' if n != 1 else ''} added; "
                                             "colour: I/Os completed (log scale), blank: none", span=span))
            continue
        out.append(Chart(id=f"{base}-latency", kind="timeseries", title=f"{workload} · {point.label}: mean latency "
                         f"per 100 ms around {what}", note="the fault's time shaded; no point: no completion",
                         ylabel="mean completion latency (µs)", series=lat, **common))
    return out


def fault_json(data: FaultData | None) -> dict | None:
    """--json's faults: each configuration at each workload, point and fault, with the mean and 95 % t interval of
    each figure over repeats (stall and unanswered in ms, recovery and the first error after the fault in s; null
    bounds with one repeat), and the sentences."""
    if data is None:
        return None

    def est(e) -> dict | None:
        return None if e is None else {"mean": e.mean, "low": None if math.isnan(e.low) else e.low,
                                       "high": None if math.isnan(e.high) else e.high, "n": e.n}

    return {"rows": [{"workload": r.workload, "point": dict(r.point.coords), "configuration": r.configuration,
                      "fault": r.fault, "kind": r.kind, "at_s": r.at_s, "duration_s": r.duration_s, "port": r.port,
                      "repeats": r.repeats, "stall_ms": est(r.stall_ms),
                      "unanswered_ms": est(r.unanswered_ms), "errors": est(r.errors),
                      "error_after_s": est(r.error_after_s),
                      "first_error": r.first_error, "degraded_pct": est(r.degraded_pct),
                      "degraded_iops": est(r.degraded_iops), "recovery_s": est(r.recovery_s),
                      "not_back": r.not_back} for r in data.rows],
            "sentences": [{"workload": w, "point": p, "text": t} for w, p, t in data.sentences]}
