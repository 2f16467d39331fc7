"""The report's data: every chart and table, built once from a manifest and its records, and the CSV exports.

HTML, figures and Markdown all render the same `ReportData`, so a number in one is the
number in the others. Building it is pure; only `write_csvs` touches files.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Callable

from ..analysis.bottleneck import bottlenecks
from ..analysis.bottleneck_words import bottleneck_findings
from ..analysis.breakdown_words import breakdown_findings
from ..analysis.claims import claim_reach, claim_verdicts, judged_at
from ..analysis.derived import Figures, busy_note, figures
from ..analysis.fault_figures import faulted
from ..analysis.findings import METRICS, TABLE_ONLY, Key, findings, measured_metrics, study_rows, verdicts
from ..analysis.headlines import headlines
from ..analysis.pairs import pair_findings
from ..analysis.paths import path_share
from ..analysis.stats import Verdict
from ..analysis.summary import matrices
from ..analysis.verification import verified_by_configuration
from ..analysis.wire import ceiling
from ..errors import ProtolabError
from ..metrics import METRICS as REGISTRY
from ..plan.faults import NO_FAULT
from ..plan.model import Plan
from ..plan.protocols import PROTOCOLS
from ..plan.target_grammar import is_lab_target, protocol_named
from ..results.manifest import Manifest
from ..results.records import CellRecord
from ..results.rundir import atomic_write
from .breakdowndata import breakdown_data
from .capacitydata import capacity_data
from .chart import Chart, Series
from .crossoverdata import crossover_data
from .detail import percentile_charts, series_charts, series_loads
from .faultdata import fault_data
from .heatmapdata import HOW as HEATMAP_HOW
from .heatmapdata import Heatmaps, heatmap_charts
from .longrun_charts import Intervals, LongRunParts, long_run_parts
from .markdown import limited_by_fault
from .report_data import DETAIL_LOADS, PCT_KEYS, ReportData, RunData, by_cell, is_closed_loop, plan_of, slug  # noqa: F401
from .stagecharts import stage_charts, stage_findings


def metric_title(metric: str, closed_loop: bool) -> str:
    """The metric's title; open-loop latency is 'latency', closed-loop latency 'service time'."""
    t = REGISTRY[metric].title
    return t if closed_loop else t.replace("service time", "latency")


def _relative_chart(data: RunData, vs: dict[Key, Verdict], workload: str, metric: str) -> Chart:
    m = METRICS[metric]
    closed = is_closed_loop(data.plan, workload)
    rows = [r for r in data.rows if r.workload == workload]
    loads = list(dict.fromkeys((r.point, r.load_label) for r in rows))
    ref = _reference(data, rows, metric)  # the baseline, or the first configuration that has the metric
    by = {(r.configuration, r.point): r for r in rows}
    series, table = [], []
    for c in [c for c in data.configurations if any((c, li) in by for li, _ in loads)]:
        vals, lo, hi = [], [], []
        for li, label in loads:
            r = by.get((c, li))
            v = vs.get((metric, workload, li, c)) if ref == data.baseline else None
            rel = r.relative.get(metric) if r else None
            if ref != data.baseline:
                x = by.get((ref, li))
                base = x.values.get(metric) if x else None
                mine = r.values.get(metric) if r else None
                rel = 100.0 * mine / base if mine is not None and base else None
            vals.append(rel)
            lo.append(100 * v.ci_low if v else None)
            hi.append(100 * v.ci_high if v else None)
            if r is not None:
                table.append({"workload": workload, "load point": label, "configuration": c,
                              "repeats": len(r.samples.get(metric) or []), f"median ({m.unit})": r.values.get(metric),
                              "% of baseline": rel, "CI low %": lo[-1], "CI high %": hi[-1],
                              "p (corrected)": v.p_adjusted if v else None,
                              "verdict": v.verdict if v else ("baseline" if c == data.baseline else "–")})
        series.append(Series(c, vals, lo, hi))
    order = [label for _, label in loads]
    table.sort(key=lambda row: order.index(row["load point"]))  # stable: configurations stay in plan order
    title = metric_title(metric, closed)
    if ref != data.baseline:  # the baseline lacks it (e.g. no server or no wire on a direct path)
        note = (f"{data.baseline} has no {m.noun}: {ref} = 100 instead (ratio of medians; no test was run against "
                f"{ref}); above 100 = {REGISTRY[metric].above}")
        return Chart(slug(metric, workload), "relative", "metrics", workload, f"{workload} — {title}", note,
                     f"% of {ref}", [label for _, label in loads], series, table)
    return Chart(slug(metric, workload), "relative", "metrics", workload, f"{workload} — {title}",
                 f"{data.baseline} = 100 at every load point; above 100 = {REGISTRY[metric].above}; whiskers: 95 % CI",
                 f"% of {data.baseline}", [label for _, label in loads], series, table)


def _reference(data: RunData, rows: list, metric: str) -> str:
    """The baseline when it has the metric somewhere, else the first configuration (plan order) that has it."""
    have = {r.configuration for r in rows if r.values.get(metric)}
    return next((c for c in [data.baseline, *data.configurations] if c in have), data.baseline)


def protocol_of(url: str) -> str | None:
    """'iscsi' for iscsi://… or lab:iscsi; None for a local path (no wire in between)."""
    name = protocol_named(url)
    return name if name is not None and PROTOCOLS[name].tcp else None


def _as_dict(v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if isinstance(v, dict):
        return v
    dump = getattr(v, "model_dump", None)
    return dump() if dump else {k: getattr(v, k) for k in ("rate", "mtu") if hasattr(v, k)}


def link_of(plan: Plan, configuration: str) -> dict[str, Any]:
    """The lab's link settings merged with the configuration's overrides ({} without a lab)."""
    if plan.lab is None:
        return {}
    lab = _as_dict(plan.lab)
    return {**_as_dict(lab.get("link")), **plan.configuration(configuration).link}


def ceiling_charts(data: RunData) -> tuple[list[Chart], str]:
    """Measured IOPS as % of the wire model's ceiling, per workload; and a note on what has no link model."""
    plan = data.plan
    if plan is None:
        return [], "the stored plan could not be read; no link model"
    protocols = {c.name: protocol_of(plan.target_of(c).url) for c in plan.configurations}
    local = [c for c in data.configurations if protocols.get(c) is None]
    if len(local) == len(data.configurations):
        return [], "no link model for local targets"
    if plan.lab is None:
        return [], "no link model: the plan has no lab link (rate, MTU) for its remote targets"
    notes = [f"no link model for local targets ({', '.join(local)})"] if local else []
    charts = []
    for w in (w for w in plan.workloads if w.name in data.workloads):
        rows = [r for r in data.rows if r.workload == w.name]
        loads = list(dict.fromkeys((r.point, r.load_label) for r in rows))
        by = {(r.configuration, r.point): r for r in rows}
        series, table = [], []
        for c in (c for c in data.configurations if c not in local):
            link = link_of(plan, c)
            try:
                ceil = ceiling(protocols[c], link_bps=link.get("rate", "1GbE"), mtu=int(link.get("mtu", 1500)),
                               block_size=w.block_size, read_pct=w.read_pct)
            except (ProtolabError, ValueError) as e:
                notes.append(f"{c}: no ceiling ({e})")
                continue
            # With segmentation offloads on, interface counters see super-packets (TSO/GSO/GRO):
            # segments handed to the NIC, not frames, so they are never set beside the model's frames.
            frames_counted = link.get("offloads", True) is False
            vals = []
            for li, label in loads:
                r = by.get((c, li))
                if r is None:
                    vals.append(None)
                    continue
                # Linux's pure ACKs depend on the I/Os in flight on each stream's connection (analysis.wire_tcp)
                oio = next((x.oio_per_stream for x in data.cells.get((w.name, li, c), [])), 1)
                at = ceiling(ceil.protocol, link_bps=link.get("rate", "1GbE"), mtu=int(link.get("mtu", 1500)),
                             block_size=w.block_size, read_pct=w.read_pct, oio=oio)
                cost, iops = at.wire_cost, r.values.get("iops")
                vals.append(100 * iops / at.iops if iops else None)
                offloads = not frames_counted
                table.append({"workload": w.name, "configuration": c, "protocol": ceil.protocol, "link": ceil.link,
                              "MTU": cost.mtu, "load point": label, "ceiling IOPS": at.iops,
                              "ceiling MB/s": at.mbps, "limited by": at.bottleneck_direction,
                              "measured IOPS": iops, "% of ceiling": vals[-1],
                              "offloads": "on" if offloads else "off",
                              "frames/I/O measured": r.values.get("packets_per_io") if frames_counted else None,
                              "frames/I/O model": cost.frames,
                              "frames/I/O model range": f"{cost.frames_low:.4g}–{cost.frames_high:.4g}",
                              "segments/I/O handed to the NIC (offloads on)":
                                  None if frames_counted else r.values.get("packets_per_io"),
                              "bytes/I/O measured": r.values.get("wire_bytes_per_io") if frames_counted else None,
                              "bytes/I/O model": cost.counted_bytes_to_storage + cost.counted_bytes_to_host})
                if offloads and "offloads" not in " ".join(notes):
                    notes.append("with segmentation offloads on (the lab's default) interfaces count segments "
                                 "handed to the NIC, not frames on the wire; set offloads = false in the link "
                                 "to compare measured frames and bytes with the model")
            series.append(Series(c, vals))
        if series:
            charts.append(Chart(slug("ceiling", w.name), "ceiling", "ceiling", w.name,
                                f"{w.name} — measured IOPS against the wire ceiling",
                                "100 = the link's ceiling for this access spec (wire model); bars: median IOPS",
                                "% of wire ceiling", [label for _, label in loads], series, table))
    return charts, "; ".join(notes)


def wire_ceilings(data: RunData) -> tuple[dict[tuple[str, str], float | None], dict[str, bool]]:
    """The wire model's ceiling IOPS per (workload, configuration), and whether a wire lies in each
    configuration's path (for analysis.bottleneck; without a readable plan: unknown, so True)."""
    plan, ceilings = data.plan, {}
    if plan is None:
        return {}, {}
    protocols = {c.name: protocol_of(plan.target_of(c).url) for c in plan.configurations}
    for w in (w for w in plan.workloads if w.name in data.workloads):
        for c in (c for c in data.configurations if protocols.get(c) and plan.lab is not None):
            link = link_of(plan, c)
            try:
                ceilings[(w.name, c)] = ceiling(protocols[c], link_bps=link.get("rate", "1GbE"), read_pct=w.read_pct,
                                                mtu=int(link.get("mtu", 1500)), block_size=w.block_size).iops
            except (ProtolabError, ValueError):
                continue
    return ceilings, {c: protocols.get(c) is not None for c in data.configurations if c in protocols}


def device_saturation(data: RunData) -> dict[tuple[str, str], float]:
    """The device model's saturation IOPS per (workload, configuration) for configurations on the lab's pool
    (plan.storage; none with the ram pool or without a readable plan)."""
    plan = data.plan
    lab = getattr(plan, "lab", None) if plan is not None else None
    if isinstance(lab, dict):  # a plan read back from a manifest keeps its [lab] as data
        from ..plan.topology import LabSpec

        lab = LabSpec.model_validate(lab)
    if lab is None or lab.device.is_ram:
        return {}
    device = lab.device
    return {(w.name, c.name): device.saturation_iops(w.block_size, w.read_pct) for w in plan.workloads
            if w.name in data.workloads for c in plan.configurations
            if c.name in data.configurations and is_lab_target(plan.target_of(c).url)}


def _run(manifest: Manifest, records: list[CellRecord], series: dict[int, dict[str, list[float]]] | Callable | None,
         alpha: float, noise: float) -> RunData:
    """The run as read: the plan's order of workloads and configurations, the rows, the records grouped and the
    series the charts draw (``series`` as in `build`)."""
    plan = plan_of(manifest)
    baseline = plan.baseline if plan else next((r.configuration for r in records if r.baseline), "")
    rows = study_rows(records, baseline)
    present, absent = measured_metrics(rows=rows)
    seen_w = list(dict.fromkeys(r.workload for r in records))
    seen_c = list(dict.fromkeys(r.configuration for r in records))
    workloads = [w.name for w in plan.workloads if w.name in seen_w] if plan else seen_w
    configurations = [c.name for c in plan.configurations if c.name in seen_c] if plan else seen_c
    workloads += [w for w in seen_w if w not in workloads]
    configurations += [c for c in seen_c if c not in configurations]
    cells = by_cell(records)
    if callable(series):  # only the series the charts draw
        series = series("measure", {r.seq for w in workloads for li in series_loads(rows, w)
                                    for c in configurations for r in cells.get((w, li, c), [])})
    return RunData(run_id=manifest.run_id or "", manifest=manifest, plan=plan, baseline=baseline,
                   workloads=workloads, configurations=configurations, rows=rows,
                   metrics=[m for m in METRICS if m in present], absent=absent, records=records,
                   series=series or {}, cells=cells, alpha=alpha, noise=noise)


def _notes(run: RunData, charts: list[Chart], ceiling_note: str, figs: list[Figures]) -> dict[str, str]:
    """Per section, what this run did not measure (and the machine's other work, when it was busy)."""
    notes = {m: "not measured in this run" for m in run.absent}
    if any(c.section == "heatmap" for c in charts):
        notes["heatmap"] = HEATMAP_HOW
    if not any(c.section == "series" for c in charts):
        notes["series"] = "per-second series not measured in this run"
    if not any(c.section == "percentiles" for c in charts):
        notes["percentiles"] = "latency histograms not stored in this run"
    if ceiling_note:
        notes["ceiling"] = ceiling_note
    busy = busy_note(figs)
    if busy:
        notes["busy"] = busy
    return notes


def build(manifest: Manifest, records: list[CellRecord], *, alpha: float = 0.05, noise: float = 0.02,
          method: str = "holm", series: dict[int, dict[str, list[float]]] | Callable | None = None,
          intervals: Intervals | None = None, drawing: Callable[[list[Chart], list[str]], object] | None = None,
          heatmaps: Heatmaps | None = None) -> ReportData:
    """Assemble the whole report's data from a manifest, its records and their per-interval series, in one pass:
    the run as read, then each part from it, then the model, once.

    ``series``: the series by record seq, or a function ``(phase, seqs)`` that reads those of the given seqs
    (a long run's series.csv holds far more than the charts draw). ``intervals``: a function ``(seqs)`` giving
    the merged per-interval rows of those seqs (``RunDir.intervals``), for the long runs (report.longrun_charts).
    ``drawing``: called with charts and the configurations as soon as those charts are made (those that need no
    statistics, then the relative charts), so that they are drawn while the rest is built. ``heatmaps``: a function
    ``(cell ids)`` giving the windows' stored latency heatmaps (results.heatmapfile.read_heatmaps).
    """
    run = _run(manifest, records, series, alpha, noise)
    plan, rows, baseline, metrics = run.plan, run.rows, run.baseline, run.metrics
    # the charts that need no statistics first, drawn while the statistics are computed
    detail = [c for w in run.workloads for c in percentile_charts(run, w)]
    maps = heatmap_charts(run, heatmaps)  # the long runs' go after their charts, in the series section
    detail += [c for w in run.workloads for c in series_charts(run, w)] + [c for c in maps if c.section != "series"]
    ceilings, ceiling_note = ceiling_charts(run)
    if drawing is not None:
        drawing(detail + ceilings, run.configurations)
    vs = verdicts(rows, baseline, metrics, alpha=alpha, noise=noise, method=method)
    relative = [_relative_chart(run, vs, w, m) for w in run.workloads for m in metrics]
    if drawing is not None:
        drawing(list(relative), run.configurations)
    found = (findings(rows, vs, baseline, metrics, alpha=alpha, noise=noise)
             + pair_findings(rows, plan, alpha=alpha, noise=noise) + stage_findings(run, alpha=alpha, noise=noise))
    long = long_run_parts(run, intervals) if intervals is not None else LongRunParts()
    found += long.findings
    saturation = device_saturation(run)
    ladder, ladder_charts = capacity_data(run, saturation)  # the rate ladder's knee and capacity (plan.rate_ladder)
    faults, fault_charts = fault_data(run, heatmaps)  # the faults' stall, errors, degraded IOPS, recovery
    wires = wire_ceilings(run)
    parts, part_charts = breakdown_data(run, wires[1])  # where each cell's mean latency went (issue 46)
    charts = [*relative, *detail, *stage_charts(run), *long.charts, *[c for c in maps if c.section == "series"],
              *ladder_charts, *fault_charts, *part_charts, *ceilings]
    # a faulted window is held by its fault, which the faults section measures: the bottleneck's words (a CPU's
    # wait, the wire's share) are for the windows with no fault
    held = bottlenecks([r for r in records if not faulted(r)], *wires, saturation)
    found += breakdown_findings(parts, vs, baseline)
    found += bottleneck_findings(held, {(r.workload, r.point): r.load_label for r in rows}, run.configurations)
    # the headline matrices sum up the windows with no fault: a faulted one's figures are the faults section's
    calm = [r for r in rows if r.point.get("fault", NO_FAULT) == NO_FAULT]
    ms = matrices(run.workloads, calm, vs, held, baseline, run.configurations, metrics)
    claims = claim_verdicts(plan, records, held, long.trends, alpha=alpha, noise=noise)
    reach = claim_reach(plan, records, alpha=alpha, noise=noise)
    paths = {k: p for k, recs in run.cells.items() if (p := path_share(recs)) is not None}
    figs = [figures(r) for r in run.records]
    by_config: dict[str, list[Figures]] = {}
    for r, f in zip(run.records, figs):
        by_config.setdefault(r.configuration, []).append(f)
    return ReportData(**run.parts(), verdicts=vs, findings=found, charts=charts,
                      notes=_notes(run, charts, ceiling_note, figs), bottlenecks=held, paths=paths,
                      trends=long.trends, matrices=ms, headlines=headlines(ms), claims=claims, reach=reach,
                      crossover=crossover_data(run), capacity=ladder, faults=faults,
                      judged=judged_at(plan) if plan is not None else "", figures=by_config,
                      verified=verified_by_configuration(run.records, run.configurations), breakdown=parts)


def absolute_rows(data: ReportData) -> list[dict[str, Any]]:
    """One row per workload, load point and configuration: medians of every measured metric and % of baseline."""
    keys = [k for k in list(METRICS) + list(TABLE_ONLY) if k not in data.absent]
    out = []
    for r in data.rows:
        row: dict[str, Any] = {"workload": r.workload, "load point": r.load_label, "configuration": r.configuration,
                               "baseline": int(r.baseline), "repeats": r.repeats}
        for k in keys:
            row[k] = r.values.get(k)
            if k in METRICS:
                row[f"{k} %"] = r.relative.get(k)
                v = data.verdicts.get((k, r.workload, r.point, r.configuration))
                row[f"{k} CI low %"] = 100 * v.ci_low if v else None
                row[f"{k} CI high %"] = 100 * v.ci_high if v else None
                row[f"{k} verdict"] = v.verdict if v else ""
        b = data.bottlenecks.get((r.workload, r.point, r.configuration))
        row["limited by"] = b.label if b else limited_by_fault(r.point).strip("–")
        out.append(row)
    return out


def to_csv(rows: list[dict[str, Any]]) -> str:
    """CSV text of a list of dicts (columns in the first row's order; None → empty)."""
    buf = io.StringIO()
    if not rows:
        return ""
    columns = list(rows[0])
    w = csv.writer(buf, lineterminator="\n")  # rows as lists: DictWriter's per-field checks were most of the cost
    w.writerow(columns)
    # None → empty, a float to 6 significant digits; inline (a function call per cell was half the cost)
    w.writerows([("" if v is None else f"{v:.6g}" if isinstance(v, float) else v) for v in map(r.get, columns)]
                for r in rows)
    return buf.getvalue()


def write_csvs(data: ReportData, folder: Path) -> list[Path]:
    """tables/<chart id>.csv for every chart, summary.csv and findings.csv; returns the paths written."""
    written = []
    found = [{"kind": f.kind, "metric": f.metric, "workload": f.workload, "text": f.text,
              "detectable %": f.detectable_pct} for f in data.findings]  # beside a "no clear difference"
    for name, rows in [("summary", absolute_rows(data)), ("findings", found)] + [(c.id, c.table) for c in data.charts]:
        if rows:
            path = folder / f"{name}.csv"
            atomic_write(path, to_csv(rows))
            written.append(path)
    return written
