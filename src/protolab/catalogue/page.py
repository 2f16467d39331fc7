"""history.html: one self-contained page for `protolab history PLAN` — the runs with their environment, and each
headline figure over the runs per configuration (one chart per workload and metric, drawn by report.figures as the
report's charts are: matplotlib is imported only there), each chart with its table of medians and changes."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from ..metrics import METRICS
from ..report.chart import Chart, Series
from ..report.htmlkit import HTML_ROWS, STATIC, TEMPLATES, environment, read, script_safe
from ..report.report_data import slug
from ..results.files import atomic_write
from .history import History

#: The chart tables' columns that hold words.
WORDS = ("run", "configuration", "change")

_PAGE = """<!DOCTYPE html>
<html lang="en" data-errors="0">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:">
<title>protolab history — {{ h.plan }}</title>
<script>{{ errors_js }}</script>
<style>{{ css }}</style>
</head>
<body>
<header>
  <h1>history <span class="muted">— {{ h.plan }}, {{ h.runs|length }} run(s)</span></h1>
  <div class="muted">Medians of repeats per run, oldest first. A change from the run before is called only as \
<code>protolab compare</code> calls one (Welch's t-test on log values, Holm-corrected per metric, the 95 % bootstrap \
interval outside the ±2 % noise band); otherwise "no called change" with the smallest change the test could have \
called (MDD, 80 % power).</div>
  <nav><a href="#runs">Runs</a><a href="#charts">Charts</a></nav>
  <div id="error-banner" hidden><b>This page hit errors:</b><ul></ul></div>
</header>
<section id="runs">
<h2>Runs</h2>
<div class="summary"><table>
<tr><th>run</th><th>started</th><th>status</th><th class="num">cells</th><th>environment</th><th>changed</th></tr>
{% for r in h.runs %}<tr><td>{{ r.run_id }}</td><td>{{ r.started }}</td><td>{{ r.status }}</td>\
<td class="num">{{ r.cells }}</td><td>{{ r.env.text() }}</td>\
<td>{{ h.env_changed.get(r.run_id, [])|join(", ") }}</td></tr>
{% endfor %}</table></div>
</section>
<section id="charts">
<h2>Charts</h2>
{% for c in charts %}{{ chart_block(c) }}{% else %}<p>No figures to draw.</p>{% endfor %}
</section>
</body>
</html>
"""


def history_charts(h: History) -> list[Chart]:
    """One chart per workload and metric: the metric's median per run (x: the runs, oldest first), one series per
    configuration and load point; its table gives each run's median and change from the run before."""
    runs = [r.run_id for r in h.runs]
    out = []
    for w in dict.fromkeys(ln.workload for ln in h.lines):
        mine = [ln for ln in h.lines if ln.workload == w]
        for m in h.metrics:
            series, table = [], []
            for ln in mine:
                at = {s.run_id: s for s in ln.steps}
                if not any(m in s.medians for s in ln.steps):
                    continue
                series.append(Series(ln.name, [at[r].medians.get(m) if r in at else None for r in runs]))
                table.extend({"run": s.run_id, "configuration": ln.name, METRICS[m].unit: s.medians.get(m),
                              "change": s.changes[m].text() if m in s.changes else ""} for s in ln.steps)
            if series:
                out.append(Chart(slug("history", m, w), "history", "history", w,
                                 f"{w} — {METRICS[m].title} over the runs",
                                 "median of repeats per run, oldest first", METRICS[m].unit, runs, series, table))
    return out


def write_history_page(h: History, folder: Path) -> Path:
    """history.html in ``folder``, with figures/ and tables/ beside it; returns the page's path."""
    from ..report.drawer import draw_all
    from ..report.tables import to_csv
    from ..trust import make_dir

    folder = make_dir(folder)  # made and checked first: a link planted there is refused before anything is drawn
    charts = history_charts(h)
    drawn = draw_all(charts, folder / "figures", list(dict.fromkeys(s.name for c in charts for s in c.series)))
    for c in charts:
        atomic_write(folder / "tables" / f"{c.id}.csv", to_csv(c.table))
    env = environment()
    chart_tpl = env.from_string(read(TEMPLATES, "chart.html.j2"))

    def chart_block(c: Chart) -> Markup:
        columns = list(c.table[0]) if c.table else []
        svg = drawn[c.id].svg
        rows = c.table[:HTML_ROWS]
        return Markup(chart_tpl.render(c=c, columns=columns, rows=rows,
                                       numeric={col for col in columns if col not in WORDS},
                                       svg=Markup(svg[svg.index("<svg"):]), series=len(c.series),
                                       cut=len(c.table) - len(rows), baseline=None))

    page = env.from_string(_PAGE).render(h=h, charts=charts, chart_block=chart_block,
                                         errors_js=script_safe(read(STATIC, "errors.js")),
                                         css=Markup(read(STATIC, "report.css")))
    path = folder / "history.html"
    atomic_write(path, page)
    return path
