"""What every HTML rendering shares: the number format of a table cell and the templates' Jinja environment."""

from __future__ import annotations

import math
from importlib import resources
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

STATIC = resources.files("protolab.report") / "static"
TEMPLATES = resources.files("protolab.report") / "templates"
#: A table shows at most this many rows on the page (the page stays quick to open); the CSV has all.
HTML_ROWS = 300


def fmt_number(v: Any) -> str:
    """A table cell: '–' for nothing, thousands separators for large numbers, 3 significant digits for small."""
    if not isinstance(v, float):  # a float first: most cells are
        if v is None:
            return "–"
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
    if not math.isfinite(v):
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def environment() -> Environment:
    """Jinja with autoescaping and the `num` filter (fmt_number)."""
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=False, lstrip_blocks=False)
    env.filters["num"] = fmt_number
    return env


def read(folder: Any, name: str) -> str:
    """A packaged template or static file's text."""
    return (folder / name).read_text(encoding="utf-8")


def script_safe(text: str) -> Markup:
    """Inline script/JSON text that cannot close its <script> element early."""
    return Markup(text.replace("</", "<\\/"))
