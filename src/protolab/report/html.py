"""The HTML report: one self-contained file (inline CSS, inline SVG charts) that fetches nothing.

Each chart is the SVG that `figures.draw` made with matplotlib — the same picture as
figures/<id>.svg and .png — inlined in the page. The page's Content-Security-Policy
forbids every network fetch; its only script reports errors (none are expected).
"""

from __future__ import annotations

import re
import secrets
from typing import Callable

from markupsafe import Markup

from .chart import Chart
from .htmlkit import HTML_ROWS, STATIC, TEMPLATES, environment, read, script_safe
from .report_data import ReportData
from .sections import Page, report_html, run_line

#: Column names of a chart's table that hold numbers (right-aligned).
_NUMERIC_WORDS = ("median", "%", "IOPS", "MB/s", "(µs)", "I/Os", "repeats", "repeat", "seconds", "ceiling",
                  "packets", "bytes", "MTU", "p (corrected)")


def render(data: ReportData, drawn: dict | None = None) -> str:
    """The whole HTML page for one run: its header, then every section (report.sections) in report order;
    ``drawn`` maps chart ids to their drawn SVG (drawn here when None)."""
    if drawn is None:
        from .drawer import draw_all

        drawn = draw_all(data.charts, None, data.configurations)
    return page(data)(drawn)


def page(data: ReportData, sections: list | None = None) -> Callable[[dict], str]:
    """The page rendered with a mark where each chart's SVG goes, and the function that puts the drawn SVGs there
    (`{id: Drawn}`): the report's process renders the page while its charts are still being drawn.

    A mark is an HTML comment holding a token drawn for this page: the run's text reaches the page escaped, so it
    can hold no comment, let alone one with the token. ``sections``: report.sections.built(data), when already
    made (for report.md)."""
    env = environment()
    chart_tpl = env.from_string(read(TEMPLATES, "chart.html.j2"))
    token = secrets.token_hex(16)
    ids: list[str] = []

    def chart_block(c: Chart) -> Markup:
        columns = [col for col in (c.table[0] if c.table else []) if col != "workload"]  # the section says it
        numeric = {col for col in columns if any(w in col for w in _NUMERIC_WORDS) and col != "limited by"}
        ids.append(c.id)
        svg = Markup(f"<!--{token}:{len(ids) - 1}-->")
        rows = c.table[:HTML_ROWS]  # a long ladder's table lives whole in tables/<id>.csv
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows, numeric=numeric, svg=svg,
                                       cut=len(c.table) - len(rows),
                                       series=0 if c.kind == "heatmap" else len(c.series),  # a mesh, no lines
                                       baseline=data.baseline if c.kind == "relative" else None))

    headings, blocks = report_html(data, Page(chart_block, env), sections)
    plan_name = data.plan.name if data.plan else (data.manifest.plan or {}).get("name", data.run_id)
    text = env.from_string(read(TEMPLATES, "report.html.j2")).render(
        data=data, manifest=data.manifest, run_line=run_line(data), plan_name=plan_name,
        description=data.plan.description if data.plan else "",
        nav=[h for h in headings if h.nav], blocks=blocks,
        errors_js=script_safe(read(STATIC, "errors.js")), css=Markup(read(STATIC, "report.css")),
    )
    mark = re.compile(f"<!--{token}:([0-9]+)-->")

    def fill(drawn: dict) -> str:
        def svg(m: re.Match) -> str:
            whole = drawn[ids[int(m.group(1))]].svg
            return whole[whole.index("<svg"):]  # inline: without the XML prolog and doctype

        return mark.sub(svg, text)

    return fill
