"""The terminal summary: IOPS and average / p99 latency, absolute and relative to the baseline (= 100)."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..analysis.relative import Row


def _num(v: float | None, digits: int = 0) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def _rel(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}"


def relative_table(rows: list[Row], workload: str, baseline: str) -> Table:
    """A rich table for one workload: each configuration at each load point, baseline = 100."""
    t = Table(title=f"{workload} — baseline {baseline} = 100 (median of repeats; load = hosts×streams×OIO=total)",
              title_justify="left")
    for col, just in [("load", "left"), ("config", "left"), ("n", "right"), ("IOPS", "right"),
                      ("IOPS %", "right"), ("avg lat µs", "right"), ("avg %", "right"),
                      ("p99 µs", "right"), ("p99 %", "right")]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    last = None
    for r in (r for r in rows if r.workload == workload):
        if last is not None and r.load_index != last:
            t.add_section()
        last = r.load_index
        name = f"[bold]{r.configuration}[/bold]" if r.baseline else r.configuration
        t.add_row(r.load_label, name, str(r.repeats), _num(r.values.get("iops")), _rel(r.relative.get("iops")),
                  _num(r.values.get("lat_mean_us"), 1), _rel(r.relative.get("lat_mean_us")),
                  _num(r.values.get("lat_p99_us"), 1), _rel(r.relative.get("lat_p99_us")))
    return t


def plain_table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    """A rich table from plain (headers, rows), e.g. the Markdown summary's, so both show the same numbers."""
    left = {"load point", "configuration", "metric", "verdict", "workload"}
    t = Table(title=title, title_justify="left")
    for h in headers:
        t.add_column(h, justify="left" if h in left else "right", no_wrap=h in ("%", "95 % CI", "interval"))  # type: ignore[arg-type]
    for row in rows:
        t.add_row(*(escape(c) for c in row))
    return t


def make_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width, or $COLUMNS, or (a pipe without COLUMNS) 132 columns."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 132
    return Console(stderr=stderr, width=width, soft_wrap=False)


def _plain(cell) -> str:
    return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain


#: More rows than this: the table is written as aligned plain text (rich measures every cell of a big table,
#: which took most of a 10,000-window report's time) — the same columns and numbers.
PLAIN_ROWS = 200


def print_table(console: Console, table: Table) -> None:
    """Print ``table``; when it is wider than the console, print each row as 'column: value' lines instead,
    so that no number is ever cut (rich would shorten cells to "14,2…")."""
    headers = [_plain(c.header) for c in table.columns]
    cells = [[_plain(x) for x in c._cells] for c in table.columns]
    rows = len(cells[0]) if cells else 0
    widths = [max([len(h), *(len(x) for x in col)]) for h, col in zip(headers, cells)]
    natural = sum(widths) + 3 * len(widths) + 1  # rich's "│ a │ b │"
    if natural <= console.width and rows <= PLAIN_ROWS:
        console.print(table)
        return
    lines = [_plain(table.title)] if table.title else []
    if natural <= console.width:
        right = [c.justify == "right" for c in table.columns]
        fmt = lambda vals: "  ".join(v.rjust(w) if r else v.ljust(w)  # noqa: E731
                                     for v, w, r in zip(vals, widths, right)).rstrip()
        lines.append(fmt(headers))
        lines.extend(fmt([col[i] for col in cells]) for i in range(rows))
    else:
        named = len(headers) > 1 and headers[1] != "%"
        for i in range(rows):
            values = [col[i] for col in cells]
            lines.append(f"- {values[0]}" + (f" · {values[1]}" if named else ""))
            for j in range(2 if named else 1, len(values)):
                name = headers[j] if headers[j] != "%" else f"{headers[j - 1]} %"
                if values[j] not in ("", "–"):
                    lines.append(f"    {name}: {values[j]}")
    console.file.write("\n".join(lines) + "\n")
    console.file.flush()
