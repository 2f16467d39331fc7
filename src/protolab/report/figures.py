"""Every chart of the report, drawn once by matplotlib: the SVG inlined in report.html, figures/<id>.svg and .png.

One renderer for every output, so the page, the SVG and the PNG show the same picture.
Each configuration keeps its colour in every chart (its place in the plan picks it).
Uses matplotlib's object API (Figure + FigureCanvasAgg), never pyplot, so no global
figure state is kept and nothing needs a display. Many charts are drawn by two worker
processes (report.drawer; this machine has two cores), forked early: matplotlib is imported only where
charts are drawn, so the process that builds the report stays small.
"""

from __future__ import annotations

import html
import io
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..results.files import atomic_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .chart import Chart

#: Colour-blind-safe palette (Okabe & Ito), repeated when there are more configurations.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
DASHES = ["-", "--", ":", "-."]  # repeats of one configuration in a per-second chart
_RC = {"svg.fonttype": "none", "svg.hashsalt": "protolab", "font.size": 8, "axes.titlesize": 9,
       "axes.spines.top": False, "axes.spines.right": False, "path.simplify": True}
#: More groups than this on a relative or ceiling chart: lines with markers instead of bars (still readable).
MAX_BAR_GROUPS = 24
FIG_W_PX, FIG_H_PX = 800, 340  # a chart at 100 dpi
TITLE_LINE_PX = 15  # one line of the 9 pt title
NOTE_CHARS = 95  # a note's line within the figure's width at 9 pt, from the plot's left edge
TICK_CHAR_PX, YLABEL_PX = 6.2, 40  # an 8 pt tick label's character; tick, its pad and the y label beside it
MAX_XTICKS = 12
_GID = re.compile(r'id="plser-(\d+)"')


def colour(i: int) -> str:
    """The i-th configuration's colour."""
    return PALETTE[i % len(PALETTE)]


def series_groups(chart: Chart) -> list[str]:
    """The configuration of each series: per-second series are named 'config rN', one colour per configuration."""
    if chart.kind not in ("series", "timeseries"):
        return [s.name for s in chart.series]
    return [s.name.rsplit(" r", 1)[0] for s in chart.series]


def _num(v: float | None) -> float:
    return math.nan if v is None else float(v)


class _Palette:
    """Colour per configuration: its index in the plan's configurations (then in order of appearance)."""

    def __init__(self, configurations: list[str]):
        self.order = list(configurations)

    def __call__(self, name: str) -> str:
        if name not in self.order:
            self.order.append(name)
        return colour(self.order.index(name))


def _xticks(ax, xs: list[int], labels: list[str]) -> None:
    step = max(1, math.ceil(len(xs) / MAX_XTICKS))
    ax.set_xticks(xs[::step], labels[::step], rotation=0 if step == 1 and len(xs) <= 6 else 30,
                  ha="center" if step == 1 and len(xs) <= 6 else "right")


def _bars(ax, chart: Chart, paint: _Palette) -> None:
    groups, n = len(chart.x), max(1, len(chart.series))
    width = 0.8 / n
    for i, s in enumerate(chart.series):
        xs = [g - 0.4 + width * (i + 0.5) for g in range(groups)]
        ys = [_num(v) for v in s.values]
        err = None
        if s.low and s.high:
            lo = [y - _num(lw) if lw is not None else 0.0 for y, lw in zip(ys, s.low)]
            hi = [_num(h) - y if h is not None else 0.0 for y, h in zip(ys, s.high)]
            err = [[max(0.0, v) if math.isfinite(v) else 0.0 for v in lo],
                   [max(0.0, v) if math.isfinite(v) else 0.0 for v in hi]]
        bars = ax.bar(xs, ys, width * 0.92, label=s.name, color=paint(s.name), yerr=err, capsize=2,
                      error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
        for patch in bars.patches:
            patch.set_gid(f"plser-{i}")
    ax.axhline(100, color="#555555", linewidth=0.8, linestyle="--")
    _xticks(ax, list(range(groups)), chart.x)


def _lines(ax, chart: Chart, paint: _Palette) -> None:
    xs = list(range(len(chart.x)))
    groups = series_groups(chart)
    drawn: dict[str, int] = {}
    many = len(xs) > MAX_BAR_GROUPS
    timed = chart.kind in ("timeseries", "xy")  # each series at its own x (an "xy" chart: latency against IOPS)
    for i, (s, group) in enumerate(zip(chart.series, groups)):
        nth = drawn.get(group, 0)
        drawn[group] = nth + 1
        ys = [_num(v) for v in s.values]
        if timed:
            xs = list(s.x or range(1, len(ys) + 1))
        marker = None if chart.kind in ("series", "timeseries") or many else "o"
        if len([y for y in ys if math.isfinite(y)]) == 1 and marker is None:
            marker = "o"  # a single value still shows
        (line,) = ax.plot(xs, ys, label=group if nth == 0 else "_nolegend_", color=paint(group), linewidth=1.1,
                          linestyle=DASHES[nth % len(DASHES)] if chart.kind in ("series", "timeseries") else "-",
                          marker=marker, markersize=3)
        line.set_gid(f"plser-{i}")
        if s.low and s.high and chart.kind in ("relative", "ceiling"):
            ax.fill_between(xs, [_num(v) for v in s.low], [_num(v) for v in s.high], color=paint(group),
                            alpha=0.15, linewidth=0)
    if chart.kind in ("relative", "ceiling"):
        ax.axhline(100, color="#555555", linewidth=0.8, linestyle="--")
    if timed:
        ax.set_xlabel(chart.xlabel)
        if chart.log_x:
            from matplotlib.ticker import FuncFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # plain numbers, not mathtext
            ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        if chart.hline is not None:
            ax.axhline(chart.hline, color="#555555", linewidth=0.8, linestyle="--")
        if chart.span is not None:
            ax.axvspan(*chart.span, color="#d62728", alpha=0.12, linewidth=0)
    elif chart.kind == "series":
        _xticks(ax, xs, chart.x)
        ax.set_xlabel("second of the measured window")
    else:
        _xticks(ax, xs, chart.x)
    if chart.log_y:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        # plain numbers, not mathtext (10^3): mathtext parsing was most of a log chart's cost
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _heatmap(fig, ax, chart: Chart) -> None:
    """Counts per step (x) and latency row (y, log), the colour a count on a log scale; a colour bar to the right."""
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    edges = chart.edges or []
    counts = np.array([[_num(v) for v in s.values] for s in chart.series], dtype=float)
    xs = chart.series[0].x if chart.series and chart.series[0].x else []
    if not len(edges) or not len(xs) or counts.size == 0:
        return
    step = (xs[1] - xs[0]) if len(xs) > 1 else 2 * xs[0]
    xedges = [x - step / 2 for x in xs] + [xs[-1] + step / 2]
    yedges = [max(e, edges[1] / 10 ** 0.125) if i == 0 else e for i, e in enumerate(edges)]  # row 0 from 0
    top = np.nanmax(counts) if np.isfinite(counts).any() else 1.0
    masked = np.ma.masked_where(~(counts > 0), counts)
    mesh = ax.pcolormesh(xedges, yedges, masked, norm=LogNorm(vmin=1, vmax=max(top, 2.0)), cmap="viridis",
                         shading="flat", rasterized=True)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlim(xedges[0], xedges[-1])
    ax.set_xlabel(chart.xlabel)
    if chart.span is not None:
        ax.axvspan(*chart.span, facecolor="none", edgecolor="#d62728", hatch="//", linewidth=0.8)
    fig.subplots_adjust(right=0.92)  # no legend beside it: the colour bar and its label take its place
    bar = fig.colorbar(mesh, ax=ax, fraction=0.04, pad=0.015)
    bar.set_label("I/Os completed")
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))  # not mathtext: its cost, as above
    bar.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _stacked(ax, chart: Chart) -> None:
    """A "stacked" chart: one horizontal bar per x (a configuration, the first on top), each series a segment laid
    end to end (a part of the mean latency); a segment below zero is drawn as none (its table says it)."""
    ys = list(range(len(chart.x)))
    left = [0.0] * len(ys)
    for i, s in enumerate(chart.series):
        width = [max(0.0, _num(v)) if v is not None else 0.0 for v in s.values]
        bars = ax.barh(ys, width, 0.6, left=left, label=s.name, color=colour(i), edgecolor="white", linewidth=0.5)
        for patch in bars.patches:
            patch.set_gid(f"plser-{i}")
        left = [a + b for a, b in zip(left, width)]
    ax.set_yticks(ys, chart.x)
    ax.invert_yaxis()
    ax.set_xlabel(chart.xlabel)


def _ytick_labels(ax) -> list[str]:
    """The y axis's major tick labels as they will be drawn (inside the view limits)."""
    low, high = sorted(ax.get_ylim())
    fmt = ax.yaxis.get_major_formatter()
    ticks = [t for t in ax.get_yticks() if low <= t <= high]
    fmt.set_locs(ticks)
    return [fmt(t, i) for i, t in enumerate(ticks)]


def figure(chart: Chart, configurations: list[str] | None = None) -> Figure:
    """A matplotlib Figure of one chart: title, axis meaning (e.g. 'above 100 = more IOPS'), legend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    # A fixed layout (legend to the right) instead of "constrained": it is most of the cost of a figure.
    fig = Figure(figsize=(FIG_W_PX / 100, FIG_H_PX / 100), dpi=100)
    fig.subplots_adjust(left=0.09, right=0.78, top=0.84, bottom=0.2)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    paint = _Palette(configurations or [])
    if chart.kind == "heatmap":
        _heatmap(fig, ax, chart)
    elif chart.kind == "stacked":
        _stacked(ax, chart)
    elif chart.kind in ("relative", "ceiling") and len(chart.x) <= MAX_BAR_GROUPS:
        _bars(ax, chart, paint)
    else:
        _lines(ax, chart, paint)
    # the note wrapped to the figure's width (a long one ran past the chart's edge), and the plot lowered to
    # leave it room; the plot moved right when the y tick labels are wide (a log axis up to "1,000,000")
    note = textwrap.wrap(chart.note, NOTE_CHARS) if chart.note else []
    ax.set_title("\n".join([chart.title, *note]), loc="left")
    lines_px = TITLE_LINE_PX * (1 + len(note)) + 12
    widest = max((len(str(t)) for t in _ytick_labels(ax)), default=0)
    fig.subplots_adjust(top=min(0.84, 1 - lines_px / FIG_H_PX),
                        left=max(0.09, (widest * TICK_CHAR_PX + YLABEL_PX) / FIG_W_PX))
    ax.set_ylabel(chart.ylabel)
    if chart.series and chart.kind != "heatmap":
        ax.legend(fontsize=7, ncols=1, frameon=False, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


def _tag(svg: str, chart: Chart) -> str:
    """Name each drawn series in the SVG: class="series" data-series="<name>" (tests and readers find them)."""
    names = [s.name for s in chart.series]
    return _GID.sub(lambda m: f'class="series" data-series="{html.escape(names[int(m.group(1))], quote=True)}"',
                    svg)


@dataclass
class Drawn:
    """One chart drawn: its SVG text (also inlined in the page) and where its files are."""

    id: str
    svg: str
    paths: list[Path]


def draw(chart: Chart, folder: Path | None, configurations: list[str] | None = None,
         png: bool = True) -> Drawn:
    """Draw one chart; write figures/<id>.svg (and .png) into ``folder`` unless it is None."""
    from matplotlib import rc_context

    with rc_context(_RC):
        fig = figure(chart, configurations)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        svg = _tag(buf.getvalue().decode("utf-8"), chart)
        paths = []
        if folder is not None:
            paths.append(folder / f"{chart.id}.svg")
            atomic_write(paths[-1], svg)
            if png:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", pil_kwargs={"compress_level": 3})  # faster than 6, no larger here
                paths.append(folder / f"{chart.id}.png")
                atomic_write(paths[-1], buf.getvalue())
    return Drawn(chart.id, svg, paths)


def _draw_args(args: tuple) -> Drawn:
    return draw(*args)
