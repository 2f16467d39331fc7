"""Every chart of the report as a static figure: figures/<chart id>.png and .svg (matplotlib, Agg backend).

Uses matplotlib's object API (Figure + FigureCanvasAgg), never pyplot, so no global
figure state is kept and nothing needs a display.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib import rc_context  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..results.rundir import atomic_write  # noqa: E402
from .tables import Chart  # noqa: E402

#: Colour-blind-safe palette (Okabe & Ito), repeated when there are more series.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
DASHES = ["-", "--", ":", "-."]  # repeats of one configuration in a per-second chart
_RC = {"svg.fonttype": "none", "svg.hashsalt": "protolab", "font.size": 8, "axes.titlesize": 9,
       "axes.spines.top": False, "axes.spines.right": False}


def colour(i: int) -> str:
    """The i-th series' colour (shared with the HTML charts)."""
    return PALETTE[i % len(PALETTE)]


def series_groups(chart: Chart) -> list[str]:
    """The configuration of each series: per-second series are named 'config rN', one colour per configuration."""
    if chart.kind != "series":
        return [s.name for s in chart.series]
    return [s.name.rsplit(" r", 1)[0] for s in chart.series]


def _num(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _bars(ax, chart: Chart) -> None:
    groups, n = len(chart.x), max(1, len(chart.series))
    width = 0.8 / n
    for i, s in enumerate(chart.series):
        xs = [g - 0.4 + width * (i + 0.5) for g in range(groups)]
        ys = [_num(v) for v in s.values]
        err = None
        if s.low and s.high:
            lo = [y - _num(l) if l is not None else 0.0 for y, l in zip(ys, s.low)]
            hi = [_num(h) - y if h is not None else 0.0 for y, h in zip(ys, s.high)]
            err = [[max(0.0, v) if math.isfinite(v) else 0.0 for v in lo],
                   [max(0.0, v) if math.isfinite(v) else 0.0 for v in hi]]
        ax.bar(xs, ys, width * 0.92, label=s.name, color=colour(i), yerr=err, capsize=2,
               error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
    ax.axhline(100, color="#555555", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(groups), chart.x)


def _lines(ax, chart: Chart) -> None:
    xs = list(range(len(chart.x)))
    groups = series_groups(chart)
    names = list(dict.fromkeys(groups))
    drawn: dict[str, int] = {}
    for s, group in zip(chart.series, groups):
        nth = drawn.get(group, 0)
        drawn[group] = nth + 1
        ax.plot(xs, [_num(v) for v in s.values], label=group if nth == 0 else "_nolegend_",
                color=colour(names.index(group)), linewidth=1.1,
                linestyle=DASHES[nth % len(DASHES)] if chart.kind == "series" else "-",
                marker="o" if chart.kind == "percentiles" else None, markersize=3)
    if chart.kind == "percentiles":
        ax.set_xticks(xs, chart.x)
    else:
        step = max(1, len(xs) // 10)
        ax.set_xticks(xs[::step], chart.x[::step])
        ax.set_xlabel("second of the measured window")
    if chart.log_y:
        ax.set_yscale("log")


def figure(chart: Chart) -> Figure:
    """A matplotlib Figure of one chart: title, axis meaning (e.g. 'above 100 = more IOPS'), legend."""
    # A fixed layout (legend to the right) instead of "constrained": it is most of the cost of a figure.
    fig = Figure(figsize=(8.0, 3.4), dpi=100)
    fig.subplots_adjust(left=0.08, right=0.78, top=0.84, bottom=0.16)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if chart.kind in ("relative", "ceiling"):
        _bars(ax, chart)
    else:
        _lines(ax, chart)
    ax.set_title(f"{chart.title}\n{chart.note}", loc="left")
    ax.set_ylabel(chart.ylabel)
    if chart.series:
        ax.legend(fontsize=7, ncols=1, frameon=False, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


def save(chart: Chart, folder: Path) -> list[Path]:
    """Write figures/<id>.png and figures/<id>.svg atomically; returns both paths."""
    paths = []
    with rc_context(_RC):
        fig = figure(chart)
        for ext in ("png", "svg"):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext, metadata={"Date": None} if ext == "svg" else None)
            path = folder / f"{chart.id}.{ext}"
            atomic_write(path, buf.getvalue())
            paths.append(path)
    return paths


def save_all(charts: list[Chart], folder: Path) -> list[Path]:
    """Every chart as PNG and SVG under `folder`."""
    out = []
    for c in charts:
        out.extend(save(c, folder))
    return out
