"""The latency breakdown's sentences (analysis.time_breakdown): where a configuration's added time per I/O went, and the
cells whose parts do not add up to fio's mean.

A sentence of added time is written only where the report's own test (analysis.findings.verdicts: Welch on log
values, Holm-corrected, outside the noise band) called the difference in the average service time at that workload
and point. Each part's share of the added time is stated only with its interval (the Welch t interval of the part's
change, over the added time); a part with fewer than two repeats on a side is said to be not tested, and a part
that folds two components (one of them not measured) is named by both.
"""

from __future__ import annotations

from typing import Iterable

from .findings import Finding, Key, pct
from .stats import HIGHER, LOWER, Verdict
from .time_breakdown import RESIDUAL_PCT, BreakdownRow, Shift, shifts

METRIC = "lat_mean_us"
WHERE = {"initiator": "in the initiator", "network": "on the network", "server": "in the server",
         "device": "in the device"}


def where(name: str) -> str:
    """'in the initiator', 'on the network', 'in the server + device'."""
    return WHERE.get(name, f"in the {name}")


def share_words(s: Shift, added: float) -> str:
    """'41 % (35–47 %) in the initiator'; an interval that holds zero: 'no clear share on the network (-3–12 %)'."""
    lo, hi = sorted((100.0 * s.low / added, 100.0 * s.high / added))
    span = f"({pct(lo)}–{pct(hi)} %)"
    if lo <= 0.0 <= hi and lo != hi:  # an interval of one value (repeats alike) is that value
        return f"no clear share {where(s.name)} {span}"
    return f"{pct(100.0 * s.us / added)} % {span} {where(s.name)}"


def _untested(ss: list[Shift]) -> str:
    n = min(min(s.n_base, s.n_other) for s in ss)
    names = [s.name for s in ss]
    who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"not tested for the {who} ({n} repeat{'s' if n != 1 else ''} on a side: an interval needs two; the "
            "capture runs on one repeat)")


def sentence(base: BreakdownRow, other: BreakdownRow, verdict: Verdict) -> str:
    """'iscsi added 288 µs per I/O over direct (baseline): 41 % (35–47 %) in the initiator, …'."""
    added = other.lat_mean_us.mean - base.lat_mean_us.mean
    head = (f"{other.workload} · {other.point.label}: {other.configuration} "
            + (f"added {added:,.0f} µs per I/O over {base.configuration} (baseline)" if added > 0 else
               f"took {-added:,.0f} µs per I/O less than {base.configuration} (baseline)")
            + f", its average service time called {verdict.verdict} by the report's test")
    ss = shifts(base, other)
    told = [share_words(s, added) for s in ss if s.tested] if added else []
    tail = [_untested([s for s in ss if not s.tested])] if any(not s.tested for s in ss) else []
    folded = [s.name for s in ss if " + " in s.name]
    if folded:
        tail.append(f"{', '.join(folded)}: not measured apart")
    body = ", ".join(told) if told else "where it went"
    return f"{head}: {body}" + ("; " + "; ".join(tail) if tail else "") + "."


def breakdown_findings(rows: Iterable[BreakdownRow], vs: dict[Key, Verdict], baseline: str) -> list[Finding]:
    """A sentence per configuration, workload and point whose average service time the report's test called
    different from the baseline's, and a note per cell whose parts miss fio's mean by more than the check allows."""
    rows = list(rows)
    base = {(r.workload, r.point): r for r in rows if r.configuration == baseline}
    out = []
    for r in rows:
        b = base.get((r.workload, r.point))
        v = vs.get((METRIC, r.workload, r.point, r.configuration))
        if b is not None and r is not b and v is not None and v.verdict in (HIGHER, LOWER):
            out.append(Finding("breakdown", sentence(b, r, v), METRIC, r.workload, (r.configuration,)))
    for r in rows:
        if r.flagged:
            out.append(Finding("note", f"{r.workload} · {r.point.label} · {r.configuration}: the parts of the latency "
                               f"breakdown add up to {100 + r.residual_pct:.1f} % of fio's mean "
                               f"({r.lat_mean_us.mean:,.1f} µs): outside the ±{RESIDUAL_PCT:g} % check ({why(r)}).",
                               METRIC, r.workload, (r.configuration,)))
    return out


def why(r: BreakdownRow) -> str:
    """Why a cell's parts miss fio's mean: a part below zero (its times out of order), or parts resting on fewer
    repeats than fio's mean."""
    below = [p for p in r.parts if p.us.mean < 0]
    if below:
        return "; ".join(f"the {p.name} part is {p.us.mean:,.1f} µs: its two times are out of order" for p in below)
    fewest = min(p.us.n for p in r.parts)
    return (f"some parts rest on {fewest} of its {r.lat_mean_us.n} repeats, whose fio mean differs from the others'"
            if fewest < r.lat_mean_us.n else "its parts' means, each over its own repeats")
