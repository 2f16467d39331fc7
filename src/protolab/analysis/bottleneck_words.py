"""The words for bottlenecks (analysis.bottleneck): one sentence per cell or group of cells, and the findings."""

from __future__ import annotations

from .bottleneck import SPREAD, Bottleneck, Cell, Usage, pct_span
from .findings import Finding


def _usage_text(us: list[Usage]) -> str:
    u = us[0]
    if u.what == "machine":
        return f"this run used {pct_span(x.share / x.limit for x in us)} of its {u.limit:g} cores"
    if u.scope == "wait":
        return f"its tasks waited for a core {pct_span(x.share for x in us)} of the window"
    if u.scope == "limit":
        return f"{pct_span(x.share / x.limit for x in us)} of the {u.limit:g}-core limit its configuration set"
    if u.what == "softirq":
        return f"one core {pct_span(x.share for x in us)} in softirq"
    if u.scope in SPREAD:
        return (f"{pct_span(x.share for x in us)} of a core over its {u.scope}: "
                f"{pct_span(x.share / x.limit for x in us)} of the {u.limit:g} cores they can use")
    lead = {"thread": "busiest thread at ", "job": "busiest job at "}.get(u.scope, "")
    waited = [x.demand for x in us if x.demand is not None and x.demand - x.share >= 0.005]
    return f"{lead}{pct_span(x.share for x in us)} of a core" + (" per job" if u.scope == "job mean" else "") + \
        (f", {pct_span(waited)} with its wait for one" if waited else "")


def cause(group: list[Bottleneck]) -> str:
    """The words for one or several cells of the same kind and cause, numbers as ranges: 'held by …'."""
    b = group[0]
    ceils = [x.ceiling_share for x in group if x.ceiling_share is not None]
    busy = [x.busiest for x in group if x.busiest is not None]
    busiest = f"busiest CPU: {busy[0].who()} at {pct_span(u.share for u in busy)} of a core" if busy else ""
    if b.kind == "wire":
        return f"held by the wire ({pct_span(ceils)} of its ceiling" + (f"; {busiest})" if busiest else ")")
    if b.kind == "storage":
        devs = [x.device_share for x in group if x.device_share is not None]
        return f"held by the array ({pct_span(devs)} of the IOPS its device model gives with every server busy" + \
            (f"; {busiest})" if busiest else ")")
    share = f"{pct_span(ceils)} of the wire's ceiling" if ceils else ""
    crowd = [x.crowded for x in group if x.crowded]
    busy_machine = (f"the machine was {pct_span(c[0] for c in crowd)} busy, {pct_span(c[1] for c in crowd)} of it "
                    "with other work") if crowd else ""
    if b.kind == "cpu" and b.held is not None:
        held = [x.held for x in group if x.held is not None]
        name = held_by(b)
        extra = [busiest] if busiest and (b.what == "machine" or b.held.scope == "wait") else []
        inner = "; ".join([_usage_text(held), *extra, *([busy_machine] if busy_machine else [])])
        return f"held by {name} ({inner})" + (f" at {share}" if share else "")
    context = "; ".join(p for p in (share, busiest) if p)
    tail = f"; {busy_machine}, which may have slowed it" if crowd else ""
    if b.kind == "none":
        return "held by neither the wire nor a CPU" + (f" ({context})" if context else "") + \
            ": storage- or latency-bound" + tail
    return f"held by something not known ({b.reason}" + (f"; {context})" if context else ")") + tail


def held_by(b: Bottleneck) -> str:
    """What held a cell, in the findings' words and without figures: 'the wire', "tgtd's CPU", 'kernel softirq',
    'CPU time fio did not get', 'neither the wire nor a CPU', 'something not known'."""
    if b.kind == "wire":
        return "the wire"
    if b.kind == "storage":
        return "the array"
    if b.kind == "cpu" and b.held is not None:
        return "kernel softirq" if b.what == "softirq" else "the machine's CPU" if b.what == "machine" \
            else f"CPU time {b.what} did not get" if b.held.scope == "wait" \
            else f"{b.what}'s CPU limit" if b.held.scope == "limit" else f"{b.what}'s CPU"
    return "neither the wire nor a CPU" if b.kind == "none" else "something not known"


def short_cause(group: list[Bottleneck]) -> str:
    """One or several cells of one group (`group_key`) in a few words: 'the wire (93–97 % of its ceiling)',
    "tgtd's CPU (95–97 %)", 'neither the wire nor a CPU', 'something not known (no CPU telemetry)'."""
    b = group[0]
    if b.kind == "wire":
        ceils = [x.ceiling_share for x in group if x.ceiling_share is not None]
        return f"the wire ({pct_span(ceils)} of its ceiling)" if ceils else "the wire"
    if b.kind == "storage":
        return f"the array ({pct_span(x.device_share for x in group if x.device_share is not None)} of its saturation)"
    if b.kind == "cpu" and b.held is not None:
        held = [x.held for x in group if x.held is not None]
        if b.held.scope == "wait":
            return f"{held_by(b)} (waited {pct_span(u.share for u in held)} of the window)"
        if b.held.scope == "limit":
            return f"{held_by(b)} ({pct_span(u.share / u.limit for u in held)} of {b.held.limit:g} core)"
        return f"{held_by(b)} ({pct_span(max(u.share, u.demand or 0) / u.limit for u in held)})"
    return held_by(b) + (f" ({b.reason})" if b.kind == "unknown" and b.reason else "")


def group_key(b: Bottleneck) -> tuple:
    """Cells with the same key read as one sentence (their numbers as ranges)."""
    held = (b.held.what, b.held.scope, b.held.limit) if b.held else None
    return (b.kind, b.what, held, b.busiest.who() if b.busiest else None, b.reason, b.ceiling_share is None,
            b.crowded is None, b.device_share is None)


def bottleneck_findings(found: dict[Cell, Bottleneck], labels: dict[tuple[str, int], str],
                        configurations: list[str]) -> list[Finding]:
    """One sentence per workload, configuration and group of load points held by the same thing."""
    out = []
    for w in dict.fromkeys(k[0] for k in found):
        for c in sorted({k[2] for k in found if k[0] == w}, key=lambda c: (
                configurations.index(c) if c in configurations else len(configurations), c)):
            mine = sorted((li, b) for (wk, li, ck), b in found.items() if wk == w and ck == c)
            groups: dict[tuple, list[tuple[int, Bottleneck]]] = {}
            for li, b in mine:
                groups.setdefault(group_key(b), []).append((li, b))
            for group in groups.values():
                where = "at every load point" if len(group) == len(mine) > 1 else \
                    "at " + ", ".join(labels.get((w, li), str(li)) for li, _ in group)
                out.append(Finding("bottleneck", f"{w}: {c} was {cause([b for _, b in group])}, {where}.",
                                   "", w, (c,)))
    return out
