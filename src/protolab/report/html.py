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
        from .drawer import draw_all

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
