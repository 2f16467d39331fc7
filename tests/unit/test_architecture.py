"""The house rules of DESIGN.md, checked on the source: one-way package imports, no import circle, no module
over 400 lines, no two modules with one file name, no private name used across packages, and every protocol and
metric named in its registry only."""

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


def _shared_names(rels: list[str]) -> dict[str, list[str]]:
    """File names that more than one module has (``__init__.py`` aside): {'summary.py': ['analysis/summary.py', …]}."""
    by: dict[str, list[str]] = defaultdict(list)
    for rel in rels:
        if not rel.endswith("/__init__.py") and rel != "__init__.py":
            by[rel.rpartition("/")[2]].append(rel)
    return {name: sorted(rels) for name, rels in by.items() if len(rels) > 1}


def test_no_two_modules_share_a_file_name():
    """A file name says which module it is without its folder: 'summary.py' three times told a reader nothing."""
    rels = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")]
    assert _shared_names(rels) == {}
    assert _shared_names(["plan/summary.py", "report/summary.py", "lab/__init__.py", "vm/__init__.py"]) == {
        "summary.py": ["plan/summary.py", "report/summary.py"]}


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _private_reaches(name: str, path: Path, text: str, mods: dict[str, Path]) -> list[str]:
    """Where module ``name`` imports a private name (``_x``; a dunder is public) from a module of another package,
    or reaches one through a module it imported: 'protolab.limits_cli:14 _count from protolab.analysis.limits'."""
    package = _package(name, path)
    found, aliases = [], {}
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                if f"{target}.{a.name}" in mods:
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
                elif target in mods and a.name.startswith("_") and not a.name.endswith("__") \
                        and _package(target, mods[target]) != package:
                    found.append(f"{name}:{node.lineno} {a.name} from {target}")
        elif isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.asname and a.name in mods})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr.startswith("_") and not node.attr.endswith("__"):
            target = aliases[node.value.id]
            if _package(target, mods[target]) != package:
                found.append(f"{name}:{node.lineno} {node.attr} from {target}")
    return found


def test_no_private_name_is_used_across_packages():
    """A leading underscore means 'this package's own': another package asks for a public, documented name."""
    mods = _modules()
    assert [hit for name, path in sorted(mods.items())
            for hit in _private_reaches(name, path, path.read_text(), mods)] == []


def test_the_private_check_finds_an_import_and_an_attribute():
    mods = _modules()
    code = ("from .analysis.limits import _count, limits_rows\nfrom .analysis import wire\nfrom . import __version__\n"
            "from .analysis.stats import _as_array\nx = wire._frames\n")
    assert _private_reaches("protolab.doctor", SRC / "doctor.py", code, mods) == [
        "protolab.doctor:1 _count from protolab.analysis.limits",
        "protolab.doctor:4 _as_array from protolab.analysis.stats",
        "protolab.doctor:5 _frames from protolab.analysis.wire"]
    own = "from .stats import _as_array\nfrom . import stats\nx = stats._t_sf\n"
    assert _private_reaches("protolab.analysis.batch", SRC / "analysis" / "batch.py", own, mods) == []  # its own


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


#: Where a protocol or server the lab runs may be named: its adapters — servers (lab/servers/), the load guests'
#: kernel initiators (vm/initiators/), the hosts' initiators (run/attach_*.py) — and the registries their entries
#: live in: protocols, servers, the attach specs a plan writes, the wire models (analysis/wire.py's MODELS and
#: its per-protocol frames). plan/migrate.py names plan fields of older formats (a configuration's "nfs" table).
ADAPTER_DIRS = ("lab/servers/", "vm/initiators/")
ADAPTER_FILES = re.compile(r"run/attach_[a-z]+\.py")
REGISTRY_FILES = {"plan/protocols.py", "plan/servers.py", "plan/attach.py", "analysis/wire.py", "plan/migrate.py"}


def _run_names() -> set[str]:
    """Every protocol the lab or a host runs (not the wire model's FC and FCoE) and every server's name."""
    from protolab.plan.protocols import PROTOCOLS
    from protolab.plan.servers import SERVERS

    return {p.name for p in PROTOCOLS.values() if not p.modelled_only and p.server} | set(SERVERS)


def _protocol_names(rel: str, text: str, names: set[str]) -> list[str]:
    """``rel``'s string constants (not docstrings) that are a protocol's or a server's name, unless it is an
    adapter or a registry: 'run/session.py:12 "iscsi"'."""
    if rel.startswith(ADAPTER_DIRS) or ADAPTER_FILES.fullmatch(rel) or rel in REGISTRY_FILES:
        return []
    tree = ast.parse(text)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    hits = [n for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names and id(n) not in docs]
    return [f'{rel}:{n.lineno} "{n.value}"' for n in sorted(hits, key=lambda n: (n.lineno, n.col_offset))]


def test_only_adapters_and_registries_name_a_protocol_or_a_server():
    """A protocol is its adapters and its registry entries: no branch, key or list elsewhere names one."""
    names = _run_names()
    assert {"iscsi", "nfs", "nbd", "nvme-tcp", "tgt", "knfsd"} <= names and "local" not in names
    found = [hit for p in sorted(SRC.rglob("*.py"))
             for hit in _protocol_names(p.relative_to(SRC).as_posix(), p.read_text(), names)]
    assert found == []


def test_the_protocol_check_finds_a_new_branch_a_key_and_a_list():
    names = _run_names()
    branch = 'def f(p):\n    """Say nfs."""\n    if p == "nfs":\n        return {"tgt": 1}\n    return ["nbd"]\n'
    assert _protocol_names("run/session.py", branch, names) == [
        'run/session.py:3 "nfs"', 'run/session.py:4 "tgt"', 'run/session.py:5 "nbd"']
    assert _protocol_names("lab/servers/tgt.py", branch, names) == []  # an adapter may
    assert _protocol_names("run/attach_iscsi.py", branch, names) == []
    assert _protocol_names("run/attaching.py", branch, names) != []  # the loop over adapters may not


def _analysis_calls(rel: str, text: str) -> list[str]:
    """The functions (and modules, whose functions they reach) of protolab.analysis that the module ``rel`` (a path
    under src/protolab) imports: 'report/sections/vm_section.py:15 protolab.analysis.derived.figures'. Its types, data
    classes and constants may be imported."""
    import importlib
    import inspect

    package = ["protolab", *Path(rel).parts[:-1]]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target != "protolab.analysis" and not target.startswith("protolab.analysis."):
                continue
            module = importlib.import_module(target)
            for a in node.names:
                value = getattr(module, a.name, None)
                if value is None:  # a submodule not imported by its package yet
                    value = importlib.import_module(f"{target}.{a.name}")
                if inspect.isfunction(value) or inspect.ismodule(value):
                    found.append(f"{rel}:{node.lineno} {target}.{a.name}")
        elif isinstance(node, ast.Import):
            found += [f"{rel}:{node.lineno} {a.name}" for a in node.names
                      if a.name == "protolab.analysis" or a.name.startswith("protolab.analysis.")]
    return found


def test_report_sections_call_no_analysis_function():
    """A section is a function of the report's model (`tables.build` runs the analysis once): it may name the
    analysis's types, never call it while rendering."""
    found = [hit for p in sorted((SRC / "report" / "sections").rglob("*.py"))
             for hit in _analysis_calls(p.relative_to(SRC).as_posix(), p.read_text())]
    assert found == []


def test_the_section_check_finds_an_analysis_function_imported():
    section = ("from ...analysis.crossover import AtPoint, sentence\n"  # a data class and a function
               "from ...analysis.findings import METRICS, Finding\n"  # a constant and a data class
               "from ...plan.coordinates import value_text\n"  # a formatting function of plan/: not a climb
               "from protolab.analysis.claims import judged_at\n"
               "from ...analysis import derived\n"
               "def build(data):\n"
               "    import protolab.analysis.derived\n"
               "    return derived.figures(data.records[0])\n")
    assert _analysis_calls("report/sections/example.py", section) == [
        "report/sections/example.py:1 protolab.analysis.crossover.sentence",
        "report/sections/example.py:4 protolab.analysis.claims.judged_at",
        "report/sections/example.py:5 protolab.analysis.derived",
        "report/sections/example.py:7 protolab.analysis.derived"]
    assert _analysis_calls("report/sections/example.py", "from ...analysis.capacity import Knee, Ladder\n") == []
