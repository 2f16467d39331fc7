"""The HTML report: one self-contained file (inline CSS, inline SVG charts) that fetches nothing.

Each chart is the SVG that `figures.draw` made with matplotlib — the same picture as
figures/<id>.svg and .png — inlined in the page. The page's Content-Security-Policy
forbids every network fetch; its only script reports errors (none are expected).
"""

from __future__ import annotations

from markupsafe import Markup

from .htmlkit import HTML_ROWS, STATIC, TEMPLATES, environment, read, script_safe
from .model import Chart, ReportData
from .sections import Page, report_html

#: Column names of a chart's table that hold numbers (right-aligned).
_NUMERIC_WORDS = ("median", "%", "IOPS", "MB/s", "(µs)", "I/Os", "repeats", "repeat", "seconds", "ceiling",
                  "packets", "bytes", "MTU", "p (corrected)")


def render(data: ReportData, drawn: dict | None = None) -> str:
    """The whole HTML page for one run: its header, then every section (report.sections) in report order;
    ``drawn`` maps chart ids to their drawn SVG (drawn here when None)."""
    env = environment()
    chart_tpl = env.from_string(read(TEMPLATES, "chart.html.j2"))
    if drawn is None:
        from .figures import draw_all

        drawn = draw_all(data.charts, None, data.configurations)

    def chart_block(c: Chart) -> Markup:
        columns = [col for col in (c.table[0] if c.table else []) if col != "workload"]  # the section says it
        numeric = {col for col in columns if any(w in col for w in _NUMERIC_WORDS) and col != "limited by"}
        svg = drawn[c.id].svg
        svg = Markup(svg[svg.index("<svg"):])  # inline: without the XML prolog and doctype
        rows = c.table[:HTML_ROWS]  # a long ladder's table lives whole in tables/<id>.csv
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric, svg=svg,
                                       cut=len(c.table) - len(rows),
                                       series=len(c.series),
                                       baseline=data.baseline if c.kind == "relative" else None))

    headings, blocks = report_html(data, Page(chart_block, env))
    plan_name = data.plan.name if data.plan else (data.manifest.plan or {}).get("name", data.run_id)
    page = env.from_string(read(TEMPLATES, "report.html.j2"))
    return page.render(
        data=data, manifest=data.manifest, plan_name=plan_name,
        description=data.plan.description if data.plan else "",
        nav=[h for h in headings if h.nav], blocks=blocks,
        errors_js=script_safe(read(STATIC, "errors.js")), css=Markup(read(STATIC, "report.css")),
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
    env = environment()
    chart_tpl = env.from_string(read(TEMPLATES, "chart.html.j2"))

    def chart_block(c: Chart) -> Markup:
        columns = list(c.table[0]) if c.table else []
        numeric = {col for col in columns if col not in ("load point", "configuration", "verdict")}
        svg = drawn[c.id].svg
        rows = c.table[:HTML_ROWS]
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric,
                                       svg=Markup(svg[svg.index("<svg"):]), series=len(c.series),
                                       cut=len(c.table) - len(rows), baseline=None))

    page = env.from_string(read(TEMPLATES, "compare.html.j2"))
    return page.render(name_a=name_a, name_b=name_b, differs=differs, tally=tally, charts=charts,
                       chart_block=chart_block, noise_pct=f"{noise * 100:g}",
                       errors_js=script_safe(read(STATIC, "errors.js")), css=Markup(read(STATIC, "report.css")))
