"""The HTML report: one self-contained file (inline CSS, inline SVG charts) that fetches nothing.

Each chart is the SVG that `figures.draw` made with matplotlib — the same picture as
figures/<id>.svg and .png — inlined in the page. The page's Content-Security-Policy
forbids every network fetch; its only script reports errors (none are expected).
"""

from __future__ import annotations

import math
from importlib import resources
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from .model import Chart, ReportData

_STATIC = resources.files("protolab.report") / "static"
_TEMPLATES = resources.files("protolab.report") / "templates"
#: A chart's table shows at most this many rows on the page (the page stays quick to open); the CSV has all.
HTML_ROWS = 300
_ENV_FIELDS = [("protolab", "protolab"), ("fio_version", "fio"), ("kernel", "kernel"), ("cpu_model", "CPU"),
               ("cpus", "CPUs"), ("machine", "machine"), ("hostname", "host"), ("python", "Python")]


def fmt_number(v: Any) -> str:
    """A table cell: '–' for nothing, thousands separators for large numbers, 3 significant digits for small."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _environment() -> Environment:
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=False, lstrip_blocks=False)
    env.filters["num"] = fmt_number
    return env


def _read(folder: Any, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def _script_safe(text: str) -> Markup:
    """Inline script/JSON text that cannot close its <script> element early."""
    return Markup(text.replace("</", "<\\/"))


def _configurations(data: ReportData) -> list[dict[str, str]]:
    plan, targets = data.plan, data.manifest.targets
    out = []
    for name in data.configurations:
        c = plan.configuration(name) if plan and any(x.name == name for x in plan.configurations) else None
        if c is None:
            out.append({"name": name, "target": str(targets.get(name, "")), "engine": "", "link": "",
                        "description": ""})
            continue
        url = plan.target_of(c).url
        link = ", ".join(f"{k}={v}" for k, v in c.link.items())
        out.append({"name": name, "target": url, "engine": c.ioengine or "(protocol's own)",
                    "link": link, "description": c.description or str(targets.get(name, ""))})
    return out


def _workloads(data: ReportData) -> list[dict[str, str]]:
    out = []
    for w in data.workloads:
        spec = next((x for x in data.plan.workloads if x.name == w), None) if data.plan else None
        loads = list(dict.fromkeys(r.load_label for r in data.rows if r.workload == w))
        out.append({"name": w, "spec": spec.summary() if spec else "", "loads": "; ".join(loads)})
    return out


def _method_text(data: ReportData) -> str:
    plan = data.plan
    if plan is None:
        return "The stored plan could not be read; the method is not known."
    return (f"{len(plan.configurations)} configurations × {len(plan.workloads)} workloads × "
            f"{len(plan.load_points)} load points; {plan.method_summary()}; configurations interleaved at each "
            f"load point so that drift of the machine does not masquerade as a difference.")


def render(data: ReportData, drawn: dict | None = None, *, alpha: float = 0.05, noise: float = 0.02) -> str:
    """The whole HTML page for one run; ``drawn`` maps chart ids to their drawn SVG (drawn here when None)."""
    from ..metrics import METRICS as REGISTRY
    from .sections import html_blocks

    env = _environment()
    chart_tpl = env.from_string(_read(_TEMPLATES, "chart.html.j2"))
    numeric_words = ("median", "%", "IOPS", "MB/s", "(µs)", "I/Os", "repeats", "repeat", "seconds", "ceiling",
                     "packets", "bytes", "MTU", "p (corrected)")

    if drawn is None:
        from .figures import draw_all

        drawn = draw_all(data.charts, None, data.configurations)

    def chart_block(c: Chart) -> Markup:
        columns = [col for col in (c.table[0] if c.table else []) if col != "workload"]  # the section says it
        numeric = {col for col in columns if any(w in col for w in numeric_words) and col != "limited by"}
        svg = drawn[c.id].svg
        svg = Markup(svg[svg.index("<svg"):])  # inline: without the XML prolog and doctype
        rows = c.table[:HTML_ROWS]  # a long ladder's table lives whole in tables/<id>.csv
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric, svg=svg,
                                       cut=len(c.table) - len(rows),
                                       series=len(c.series),
                                       baseline=data.baseline if c.kind == "relative" else None))

    by_section: dict[str, list[Chart]] = {"metrics": [], "percentiles": [], "series": [], "ceiling": []}
    for c in data.charts:
        by_section.setdefault(c.section, []).append(c)
    prov = data.manifest.provenance
    titles = {k: m.title for k, m in REGISTRY.items()}
    plan_name = data.plan.name if data.plan else (data.manifest.plan or {}).get("name", data.run_id)
    page = env.from_string(_read(_TEMPLATES, "report.html.j2"))
    return page.render(
        data=data, manifest=data.manifest, plan_name=plan_name,
        description=data.plan.description if data.plan else "",
        findings=[f for f in data.findings if f.kind != "outlier"],
        outliers=[f for f in data.findings if f.kind == "outlier"],
        method_text=_method_text(data), alpha=alpha, noise_pct=f"{noise * 100:g}",
        configurations=_configurations(data), workloads=_workloads(data),
        environment=[(label, getattr(prov, k)) for k, label in _ENV_FIELDS
                     if getattr(prov, k, None) not in (None, "")],
        not_measured=[titles[m] for m in data.absent],
        charts_by_section=by_section, chart_block=chart_block,
        sections=html_blocks(data),
        errors_js=_script_safe(_read(_STATIC, "errors.js")), css=Markup(_read(_STATIC, "report.css")),
    )


def compare_charts(rows: list) -> list[Chart]:
    """One chart per workload and metric of a comparison: B as % of A at each load point, per configuration."""
    from ..metrics import title as metric_title
    from .model import Series, slug

    out = []
    for w in dict.fromkeys(r.workload for r in rows):
        for m in dict.fromkeys(r.metric for r in rows if r.workload == w):
            mine = [r for r in rows if r.workload == w and r.metric == m]
            loads = list(dict.fromkeys(r.load_label for r in mine))
            by = {(r.configuration, r.load_label): r for r in mine}
            series = []
            for c in dict.fromkeys(r.configuration for r in mine):
                got = [by.get((c, lb)) for lb in loads]
                series.append(Series(c, [r.relative if r else None for r in got],
                                     [r.ci_low if r and r.n_a >= 3 and r.n_b >= 3 else None for r in got],
                                     [r.ci_high if r and r.n_a >= 3 and r.n_b >= 3 else None for r in got]))
            table = [{"load point": r.load_label, "configuration": r.configuration, "verdict": r.verdict,
                      "B % of A": r.relative, "CI low %": r.ci_low, "CI high %": r.ci_high,
                      "p (corrected)": r.p_adjusted, "n A": r.n_a, "n B": r.n_b, "median A": r.median_a,
                      "median B": r.median_b} for r in mine]
            title = metric_title(m)
            out.append(Chart(slug("compare", m, w), "relative", "metrics", w, f"{w} — {title}, B relative to A",
                             "A = 100 at every load point; whiskers: 95 % CI (none below 3 repeats a side)",
                             "% of A", loads, series, table))
    return out


def render_compare(name_a: str, name_b: str, differs: list[str], tally: str, charts: list[Chart],
                   drawn: dict, *, noise: float = 0.02) -> str:
    """compare.html: what differs, the verdicts' tally, and B relative to A as charts with their tables."""
    env = _environment()
    chart_tpl = env.from_string(_read(_TEMPLATES, "chart.html.j2"))

    def chart_block(c: Chart) -> Markup:
        columns = list(c.table[0]) if c.table else []
        numeric = {col for col in columns if col not in ("load point", "configuration", "verdict")}
        svg = drawn[c.id].svg
        rows = c.table[:HTML_ROWS]
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric,
                                       svg=Markup(svg[svg.index("<svg"):]), series=len(c.series),
                                       cut=len(c.table) - len(rows), baseline=None))

    page = env.from_string(_read(_TEMPLATES, "compare.html.j2"))
    return page.render(name_a=name_a, name_b=name_b, differs=differs, tally=tally, charts=charts,
                       chart_block=chart_block, noise_pct=f"{noise * 100:g}",
                       errors_js=_script_safe(_read(_STATIC, "errors.js")), css=Markup(_read(_STATIC, "report.css")))
