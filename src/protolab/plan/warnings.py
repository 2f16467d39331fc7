"""Warnings about a valid plan whose numbers would mislead: printed by `validate` (one line each, exit 0)."""

from __future__ import annotations

from .drop_caches import cache_warnings
from .model import Plan
from .preflight import target_bytes
from .rate_ladder import oio_warning
from .target_grammar import parse_target
from .units import format_size

#: fio engines that keep one I/O in flight per job, whatever iodepth says.
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})


def plan_warnings(plan: Plan, memory_bytes: int | None = None) -> list[str]:
    """What a reader of this plan's report should know before running it; ``memory_bytes``: the server's RAM."""
    out = []
    m = plan.method
    if m.max_repeats < 3:
        shown = m.repeats if isinstance(m.repeats, int) else f"at most {m.max_repeats}"
        out.append(f"method.repeats = {shown}: with fewer than 3 repeats per cell no difference can be "
                   "tested; the report will say \"not tested\" (use 3 or more)")
    elif m.min_repeats < 3:
        out.append(f"method.repeats: a cell whose first {m.min_repeats} repeats already satisfy the rule stops "
                   "there, and with fewer than 3 repeats its differences are \"not tested\" (min = 3 avoids it)")
    for w in plan.workloads:
        if w.replay is not None and w.trace and not w.replay.no_stall:
            lasts = w.trace.get("duration_s", 0) * w.replay.time_scale
            if lasts > m.duration:
                out.append(f"workload {w.name!r}: its trace lasts {lasts:.1f} s at time_scale "
                           f"{w.replay.time_scale:g}, longer than the {m.duration:g} s window: the replay is cut "
                           "there (raise method.duration or lower time_scale)")
    for c in plan.configurations:
        engine = c.ioengine or "io_uring"
        ref = parse_target(plan.target_of(c).url)
        if ref.kind == "path" or ref.lab == "local":
            if engine in SYNC_ENGINES:
                deep = [lp for lp in plan.load_points for w in plan.workloads if lp.oio_for(w) > 1]
                if deep:
                    lp = deep[0]
                    out.append(f"configuration {c.name!r}: {engine} is synchronous — one I/O in flight per "
                               f"stream, so a load point of {lp.label(plan.workloads[0])} "
                               f"has {lp.hosts * lp.streams} in flight, not "
                               f"{lp.hosts * lp.streams * lp.oio_for(plan.workloads[0])}; use io_uring or libaio "
                               "for queue depths above 1")
        cached = ref.is_lab  # the lab's server; a load host's own page cache: plan.drop_caches.cache_warnings
        size = target_bytes(plan, c, ref)
        if memory_bytes and cached and size < memory_bytes:
            out.append(f"configuration {c.name!r}: its data set ({format_size(size)}) is smaller than the "
                       f"server's memory ({format_size(memory_bytes)}): reads may be served from the page cache "
                       "and measure memory, not storage")
    out += [w for w in [oio_warning(plan)] if w]
    size = lambda c: target_bytes(plan, c, parse_target(plan.target_of(c).url))  # noqa: E731
    return out + cache_warnings(plan, memory_bytes, size)


def machine_memory() -> int | None:
    """This machine's RAM in bytes (the embedded lab's server runs here), from /proc/meminfo."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
