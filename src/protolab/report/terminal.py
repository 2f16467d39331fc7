"""Tables on the terminal: rich tables that fit, plain aligned text for long ones, 'column: value' lines when
too wide."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


def plain_table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    """A rich table from plain (headers, rows), e.g. the Markdown summary's, so both show the same numbers."""
    left = {"load point", "configuration", "metric", "verdict", "workload"}
    t = Table(title=escape(title), title_justify="left")  # a title is text: "[range …]" is not markup
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
