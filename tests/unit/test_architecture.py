"""The house rules of DESIGN.md, checked on the source: one-way package imports, no import circle, no module
over 400 lines, and every protocol and metric named in its registry only."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "protolab"

#: What each package must never import (lazily or not): data flows plan → lab/engine/telemetry/vm → run →
#: results → analysis → report → catalogue → cli; analysis is pure functions any phase may call, and nothing below the
#: report may print one.
FORBIDDEN = {
    "plan": {"lab", "engine", "telemetry", "vm", "run", "results", "analysis", "report", "cli", "limits_cli",
             "doctor", "catalogue"},
    "lab": {"engine", "run", "results", "analysis", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "engine": {"lab", "run", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "telemetry": {"lab", "engine", "run", "results", "analysis", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "vm": {"run", "results", "analysis", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "results": {"lab", "engine", "telemetry", "vm", "run", "analysis", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "analysis": {"lab", "engine", "telemetry", "vm", "run", "report", "cli", "limits_cli", "doctor", "catalogue"},
    "run": {"report", "cli", "limits_cli", "doctor", "catalogue"},
    "report": {"cli", "limits_cli", "doctor", "lab", "engine", "telemetry", "vm", "run", "catalogue"},
    # the catalogue reads run directories and draws with the report; it starts nothing and touches no testbed
    "catalogue": {"cli", "limits_cli", "doctor", "lab", "engine", "telemetry", "vm", "run"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        parts = p.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _imports() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
                targets = subs if subs and len(subs) == len(node.names) else [target, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges[name].update(t for t in targets if t in mods and t != name and t.startswith("protolab"))
    return edges


def _top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_packages_import_one_way():
    wrong = [f"{m} imports {t}" for m, ts in _imports().items() for t in ts
             if _top(t) in FORBIDDEN.get(_top(m), set())]
    assert wrong == []


def test_no_import_circle():
    edges, seen, stack, found = _imports(), set(), [], []

    def visit(u: str) -> None:
        seen.add(u)
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if v in stack:
                found.append(" → ".join(stack[stack.index(v):] + [v]))
            elif v not in seen:
                visit(v)
        stack.pop()

    for u in sorted(edges):
        if u not in seen:
            visit(u)
    assert found == []


def test_no_module_over_400_lines():
    assert [f"{p.relative_to(SRC)}: {n}" for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400] == []


def test_protocol_and_metric_names_live_in_their_registries():
    """No tuple or list of protocol names outside plan/protocols.py; no `lab:` test outside plan/; no
    `load_index` in analysis/ or report/ (they group by coordinates)."""
    names = ("iscsi", "nfs", "nbd", "fcoe")
    alts = "|".join(names)
    listing = re.compile(r'[\(\[\{]\s*"(%s)",\s*"(?!\1")(%s)"' % (alts, alts))
    found = []
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC).as_posix()
        text = p.read_text()
        if rel != "plan/protocols.py" and listing.search(text):
            found.append(f"{rel}: a protocol list")
        if not rel.startswith("plan/") and 'startswith("lab:")' in text:
            found.append(f"{rel}: startswith('lab:')")
        if rel.startswith(("analysis/", "report/")) and "load_index" in text:
            found.append(f"{rel}: load_index")
    assert found == []
