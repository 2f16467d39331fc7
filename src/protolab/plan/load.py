"""Loading a plan file into a validated Plan, with one-line errors that say what to do."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..conventions import digits
from ..errors import PlanError
from .library import BUILTIN_WORKLOADS, builtin_studies
from .model import Plan, Workload

_HINTS = {
    "extra_forbidden": "remove it or check its spelling (see docs/plan.md)",
    "missing": "add it",
    "greater_than_equal": "",
    "greater_than": "",
    "less_than_equal": "",
}


#: A plan is a page of TOML; anything larger is not a plan (and /dev/zero must not fill memory).
MAX_PLAN_BYTES = 4 * 1024**2


def read_plan_file(path: str | Path) -> str:
    """The text of the plan file at ``path``: a regular file (after symlinks) of at most 4 MiB, UTF-8."""
    p = Path(path)
    try:
        st = os.stat(p)  # follows symlinks: a link to a plan is fine, a link to a device is not
        if stat.S_ISDIR(st.st_mode):
            raise PlanError(f"{p}: is a directory, not a plan file; give the path of a .toml plan")
        if not stat.S_ISREG(st.st_mode):
            raise PlanError(f"{p}: is not a regular file (a FIFO, device or socket); give the path of a .toml plan")
        if st.st_size > MAX_PLAN_BYTES:
            raise PlanError(f"{p}: is {st.st_size:,} bytes, more than a plan's {MAX_PLAN_BYTES // 1024**2} MiB; "
                            "give the path of a .toml plan")
        # O_NONBLOCK: if the path was swapped for a FIFO after the check, open must not hang
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise PlanError(f"{p}: is not a regular file; give the path of a .toml plan")
            data = f.read(MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise PlanError(f"{p}: no such plan file; check the path, or run 'protolab plans' for built-ins") from None
    except OSError as e:
        raise PlanError(f"{p}: cannot read the plan ({e.strerror or e}); check its permissions") from None
    if len(data) > MAX_PLAN_BYTES:
        raise PlanError(f"{p}: is larger than a plan's {MAX_PLAN_BYTES // 1024**2} MiB; give the path of a .toml plan")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError(f"{p}: is not a UTF-8 text file; a plan is TOML text") from None


def load_plan(path: str | Path) -> Plan:
    """Read, parse and validate the plan at ``path``; any problem is a one-line PlanError."""
    return load_plan_text(read_plan_file(path), source=str(Path(path)))


def load_builtin(name: str, scale: str | None = None, device_model: str | None = None) -> tuple[Plan, str]:
    """A built-in study by name (at ``scale``, over ``device_model``), and its TOML text."""
    studies = builtin_studies()
    if name not in studies:
        raise PlanError(
            f"--builtin {name}: no such built-in study; choose one of: {', '.join(studies)} (see 'protolab plans')"
        )
    return load_plan_text(studies[name], source=f"<builtin:{name}>", scale=scale,
                          device_model=device_model), studies[name]


def load_plan_text(text: str, *, source: str = "<plan>", scale: str | None = None,
                   device_model: str | None = None) -> Plan:
    """Parse and validate plan TOML ``text`` at ``scale`` (see plan.scales), over ``device_model`` (a preset in
    place of the plan's [lab.storage]: `run --device-model`); ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{source}: invalid TOML: {e}; fix the syntax at that line") from None
    except RecursionError:
        raise PlanError(f"{source}: invalid TOML: nested too deeply; a plan is a few flat tables") from None
    return load_plan_data(data, source=source, text=text, scale=scale, device_model=device_model)


def load_plan_data(data: dict[str, Any], *, source: str = "<plan>", text: str = "", scale: str | None = None,
                   device_model: str | None = None) -> Plan:
    """Validate parsed plan data (a TOML document as a dict) at ``scale``; any problem is a one-line PlanError."""
    from .scales import apply_scale
    from .storage import with_device_model

    data = with_device_model(apply_scale(data, scale, source), device_model, source)
    workloads = _resolve_workloads(data.get("workloads"), source, text)
    data = {**data, "workloads": workloads} if workloads is not None else data
    if "baseline" not in data:
        configs = data.get("configurations")
        names = [c.get("name") for c in configs if isinstance(c, dict)] if isinstance(configs, list) else []
        hint = f" (one of: {', '.join(map(str, names))})" if names else ""
        raise PlanError(
            f'{source}: baseline: missing; add baseline = "<configuration name>"{hint} at the top of the plan'
        )
    if "lab" in data:
        data["lab"] = _validate_lab(data["lab"], source, text)
    if "hypervisor" in data:
        from .hypervisor import Hypervisor

        try:
            data["hypervisor"] = Hypervisor.model_validate(data["hypervisor"])
        except ValidationError as e:
            raise PlanError(_one_line(e, source, text, prefix=("hypervisor",))) from None
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise PlanError(_one_line(e, source, text)) from None
    if plan.uses_lab() and plan.lab is None:
        plan = plan.model_copy(update={"lab": _validate_lab({}, source, text)})  # the lab's defaults
    from .breakdown import check_breakdown
    from .drop_caches import check_drop_caches
    from .faults import check_faults
    from .rate_ladder import check_capacity
    from .sweep import check_sweep
    from .verify import check_verify

    for why in (check_sweep(plan), check_drop_caches(plan), check_capacity(plan), check_verify(plan),
                check_faults(plan), check_breakdown(plan)):
        if why:
            raise PlanError(f"{source}: {why}")
    return plan


def _resolve_workloads(raw: Any, source: str, text: str) -> list[Workload] | None:
    """Workload entries → Workload models: a built-in name, or a table with overrides."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise PlanError(
            f"{source}{_at(text, ['workloads'])}: workloads: expected a list of names or tables, "
            'e.g. workloads = ["tr3808-4k"]'
        )
    out = []
    for i, entry in enumerate(raw):
        where = f"workloads[{i}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict):
            raise PlanError(f"{source}{_at(text, ['workloads'])}: {where}: expected a workload name or a table")
        entry = dict(entry)
        base_name = entry.pop("base", None)
        name = entry.get("name")
        for key, value in (("base", base_name), ("name", name)):
            if value is not None and not isinstance(value, str):
                raise PlanError(f"{source}{_at(text, ['workloads'])}: {where}.{key}: expected a workload name "
                                f"(a string), got {type(value).__name__}")
        if base_name is None and name in BUILTIN_WORKLOADS:
            base_name = name
        base: dict[str, Any] = {}
        if base_name is not None:
            if base_name not in BUILTIN_WORKLOADS:
                raise PlanError(
                    f"{source}{_at(text, ['workloads', str(base_name)])}: {where}: unknown workload {base_name!r}; "
                    "run 'protolab workloads' for the built-ins, or give block_size, read_pct and random_pct"
                )
            base = BUILTIN_WORKLOADS[base_name].model_dump(
                exclude={"description"} if entry.get("description") else set())
            if name is None:
                entry["name"] = base_name
        elif set(entry) <= {"name", "description"}:
            raise PlanError(
                f"{source}{_at(text, ['workloads', str(name)])}: {where}: unknown workload {name!r}; "
                "run 'protolab workloads' for the built-ins, or give block_size, read_pct and random_pct"
            )
        if "replay" in entry:
            entry = _replay_entry(entry, base, source, text, i)
        try:
            out.append(Workload.model_validate({**base, **entry}))
        except ValidationError as e:
            raise PlanError(_one_line(e, source, text, prefix=("workloads", i))) from None
        if out[-1].replay is not None and (plan_dir := _plan_dir(source)) is not None:
            out[-1].replay._plan_dir = str(plan_dir)  # the run checks the trace again, by the same rule
    return out


def _plan_dir(source: str) -> Path | None:
    """The directory of the plan file ``source`` names (None for a built-in, a text or a stored plan)."""
    plan_file = Path(source)
    return plan_file.parent if plan_file.is_file() else None


#: The block sizes of a replayed trace that its workload names (the most frequent ones).
TRACE_SIZES = 8


def _replay_entry(entry: dict[str, Any], base: dict[str, Any], source: str, text: str, index: int) -> dict[str, Any]:
    """A replay workload's access spec, read from its trace (which is checked here, so `validate` refuses
    a missing, irregular, oversized or malformed trace before anything runs)."""
    from ..traces import TraceError, user_trace
    from .shape import Replay, replay_conflicts, replay_form

    at = f"{source}{_at(text, ['workloads'])}: workloads[{index}].replay"
    raw = entry["replay"]
    if not isinstance(raw, (str, dict)):
        raise PlanError(f"{at}: expected a trace's path or a table {{ file = \"PATH\", time_scale = 1.0 }}, "
                        f"got {type(raw).__name__}")
    try:
        replay = Replay.model_validate(replay_form(raw))
    except ValidationError as e:
        raise PlanError(_one_line(e, source, text, prefix=("workloads", index, "replay"))) from None
    given = [k for k in ("block_size", "read_pct", "random_pct", "trace") if k in entry]
    if given:
        raise PlanError(f"{at}: {', '.join(given)} come{'s' if len(given) == 1 else ''} from the trace; "
                        "remove them from the workload")
    try:
        replay_conflicts({**base, **entry})
        summary = user_trace(replay.file, _plan_dir(source)).summary()
    except (TraceError, ValueError) as e:
        raise PlanError(f"{at}: {e}") from None
    sizes = {n: c for n, c in summary.pop("sizes").items() if n % 512 == 0 and 512 <= n <= 1024**3}
    if not sizes:
        raise PlanError(f"{at}: {replay.file}: no I/O of the trace is a multiple of 512 bytes up to 1G; "
                        "protolab replays block I/O")
    top = dict(list(sizes.items())[:TRACE_SIZES])
    return {**entry, "block_size": top, "read_pct": 100 * summary["reads"] / summary["ios"],
            "random_pct": summary["random_pct"], "trace": summary}


def _validate_lab(raw: Any, source: str, text: str) -> Any:
    try:
        from .topology import LabSpec
    except ImportError:  # the lab model is not installed in this build
        raise PlanError(f"{source}: lab: this protolab has no embedded lab support") from None
    try:
        return LabSpec.model_validate(raw)
    except ValidationError as e:
        raise PlanError(_one_line(e, source, text, prefix=("lab",))) from None


def _one_line(e: ValidationError, source: str, text: str, prefix: tuple = ()) -> str:
    """The first validation error as 'FILE:LINE: field.path: problem; what to do'."""
    errors = e.errors(include_url=False)
    # a value that could be one of two forms (a name or a table) fails both; the deeper error is the one
    # that says what is wrong inside the table the user wrote
    err = max(errors, key=lambda x: (len(x["loc"]), -errors.index(x)))
    loc = prefix + tuple(p for p in err["loc"] if not (isinstance(p, str) and (
        p in {"str", "int", "TargetSpec", "dict[int,float]"} or p.startswith(("constrained-", "function-")))))
    field = _dotted(loc)
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if len(msg) > 400:  # a value echoed whole could be megabytes: keep the start and the advice at the end
        msg = f"{msg[:200]} … {msg[-150:]}"
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "missing":
        msg = "missing"
    elif "input" in err and err["type"] not in {"value_error", "assertion_error"}:
        shown = repr(err["input"])
        msg = f"{msg} (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    hint = _HINTS.get(err["type"], "")
    if not hint and err["type"].startswith(("int_", "float_")):
        hint = "write a whole number" if err["type"].startswith("int_") else "write a number"
    elif not hint and err["type"].endswith(("_type", "_parsing")):
        hint = "fix the value's type (see docs/plan.md)"
    elif not hint and err["type"].startswith(("greater", "less")):
        hint = "see docs/plan.md for the allowed range"
    hint = f"; {hint}" if hint else ""
    return f"{source}{_at(text, [str(p) for p in loc])}: {field}: {msg}{hint}"


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "plan"


def _at(text: str, keys: list[str]) -> str:
    """':LINE' of the best guess where ``keys`` (a field path) is written, or ''."""
    lines = [ln.split("#", 1)[0] for ln in text.splitlines()]
    line_no = None
    start = 0
    last = None
    for key in keys:
        if digits(key):
            # the N-th [[last]] table, when the array is written as tables
            header = re.compile(rf"^\s*\[\[\s*{re.escape(last or '')}\s*\]\]")
            hits = [i for i in range(len(lines)) if header.search(lines[i])]
            if len(hits) > int(key):
                line_no, start = hits[int(key)] + 1, hits[int(key)]
            continue
        pat = re.compile(rf'^\s*(\[\[?\s*)?([\w."-]*\.)?"?{re.escape(key)}"?\s*(=|\]|\.)|"{re.escape(key)}"')
        for i in range(start, len(lines)):
            if pat.search(lines[i]):
                line_no, start = i + 1, i
                break
        last = key
    return f":{line_no}" if line_no else ""


def study_runtimes(name: str) -> tuple[str, str]:
    """A built-in study's seed and its measurement time at each scale ("quick ≈ 4 min, full ≈ 31 h")."""
    import tomllib

    from .expand import expand
    from .scales import scales_of

    data = tomllib.loads(builtin_studies()[name])
    parts = []
    for scale in scales_of(data) or [None]:
        plan, _ = load_builtin(name, scale)
        seconds = len(expand(plan)) * plan.seconds_per_cell
        t = f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{max(1, round(seconds / 60))} min"
        parts.append(f"{scale} ≈ {t}" if scale else f"≈ {t}")
    return str(data.get("seed", "")), ", ".join(parts) + " of measurement"
