"""At most 10 headline sentences that aggregate the summary matrices (analysis.summary) across configurations,
load points and workloads — computed from the called differences and the bottlenecks, never typed.

Grouping: configurations whose difference from the baseline was called in the same metric and direction, either
at every load point or (a "mixed" cell called one way only) at some, form one sentence; groups with the same
configurations, metric, direction and coverage in several workloads merge into one. A sentence gives the range of
the effect over its configurations and called load points (each point's change in its own direction: "62–79 %
fewer IOPS"). What held each configuration back (the bottleneck analysis's words) is one headline per workload,
placed after that workload's first: a short sentence per bound, at most `HELD_MOST`. A workload where nothing was
called says so, with the smallest difference the run could have detected there.

The rule that chooses them (effect size and confidence together): differences called at every load point come
before those called at some; then the larger *conservative* effect first — the smallest, over the group's called
load points, of the distance from no change to the interval's nearer end, on a log scale (a large change with a
wide interval ranks below a smaller one known tightly); then the group with more configurations; then report order
of the metrics. The list is cut at `MOST` sentences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..metrics import METRICS
from .findings import pct
from .stats import HIGHER, LOWER
from .summary import MIXED, SAME, UNTESTED, Cell, Matrix, PointCall

MOST = 10
HELD_MOST = 3  # bounds named in a workload's sentence on what held it back


@dataclass(frozen=True)
class Headline:
    """One sentence of the summary and what it stands on."""

    text: str
    kind: str  # "difference", "held", "none"
    workloads: tuple[str, ...]
    configurations: tuple[str, ...] = ()
    metric: str = ""
    direction: str = ""  # higher, lower
    every: bool = True  # at every load point (else at some)
    low_pct: float | None = None  # the range of the effect, each in its own direction
    high_pct: float | None = None
    score: float = 0.0  # the conservative effect (log scale) the ranking used


def _effect(c: PointCall, direction: str) -> tuple[float, float]:
    """(the change in its own direction in %, the conservative effect: log distance of the interval's nearer end)."""
    rel = c.relative if c.relative is not None else 100.0
    if direction == HIGHER:
        near = c.low if c.low is not None else rel
        return rel - 100.0, math.log(max(near, 1e-9) / 100.0)
    near = c.high if c.high is not None else rel
    return 100.0 - rel, -math.log(max(near, 1e-9) / 100.0)


def _direction(cell: Cell) -> tuple[str, bool] | None:
    """(direction, at every load point) of a cell called one way only; None otherwise."""
    if cell.state in (HIGHER, LOWER):
        return cell.state, True
    if cell.state == MIXED:
        dirs = {p.verdict for p in cell.points if p.verdict in (HIGHER, LOWER)}
        if len(dirs) == 1:
            return dirs.pop(), False
    return None


def _names(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def _span(lo: float, hi: float) -> str:
    return f"{pct(lo)} %" if pct(lo) == pct(hi) else f"{pct(lo)}–{pct(hi)} %"


def _groups(m: Matrix) -> dict[tuple[str, str, bool], list[tuple[str, list[PointCall]]]]:
    """(metric, direction, every) → [(configuration, its called points)] for one matrix."""
    out: dict[tuple[str, str, bool], list[tuple[str, list[PointCall]]]] = {}
    for row in (r for r in m.rows if not r.baseline):
        for key in m.metrics:
            got = _direction(row.cells[key])
            if got is not None:
                called = [p for p in row.cells[key].points if p.verdict == got[0]]
                out.setdefault((key, got[0], got[1]), []).append((row.configuration, called))
    return out


def _difference_headlines(ms: list[Matrix]) -> list[Headline]:
    merged: dict[tuple, list[tuple[Matrix, list[tuple[str, list[PointCall]]]]]] = {}
    for m in ms:
        for (key, direction, every), members in _groups(m).items():
            configs = tuple(c for c, _ in members)
            merged.setdefault((key, direction, every, configs, m.baseline), []).append((m, members))
    out = []
    for (key, direction, every, configs, baseline), found in merged.items():
        effects = [_effect(p, direction) for _, members in found for _, calls in members for p in calls]
        lo, hi = min(e[0] for e in effects), max(e[0] for e in effects)
        metric = METRICS[key]
        others = [r.configuration for r in found[0][0].rows if not r.baseline]
        who = "every configuration" if len(configs) > 1 and list(configs) == others else _names(list(configs))
        workloads = [m.workload for m, _ in found]
        where = "at every load point" if every else "at some load points"
        if len(workloads) > 1 and len(workloads) == len(ms):
            head = f"In every workload, {who}"
        else:
            head = f"{_names(workloads)}: {who}"
        word = metric.more if direction == HIGHER else metric.less
        text = f"{head} had {_span(lo, hi)} {word} {metric.noun} than {baseline} {where}."
        out.append(Headline(text, "difference", tuple(workloads), configs, key, direction,
                            every, lo, hi, min(e[1] for e in effects)))
    order = {k: i for i, k in enumerate(METRICS)}
    return sorted(out, key=lambda h: (not h.every, -h.score, -len(h.configurations), order.get(h.metric, 0)))


def _held(m: Matrix, most: int = HELD_MOST) -> Headline | None:
    """What held each configuration of one workload back: a short sentence per bound, the bound holding the most
    configurations first ('a and b were held back by the wire, and c at some load points.'), at most ``most``."""
    every: dict[str, list[str]] = {}
    some: dict[str, list[str]] = {}
    for r in m.rows:
        for bound in r.held:  # several: each held it at some load points, not all
            (every if len(r.held) == 1 else some).setdefault(bound, []).append(r.configuration)
    if not every and not some:
        return None
    bounds = sorted(dict.fromkeys([*every, *some]), key=lambda b: -len(every.get(b, [])) - len(some.get(b, [])))
    said = []
    for bound in bounds[:most]:
        alls, parts = every.get(bound, []), some.get(bound, [])
        if alls:
            text = f"{_names(alls)} {'were' if len(alls) > 1 else 'was'} held back by {bound}"
            text += f", and {_names(parts)} at some load points" if parts else ""
        else:
            text = f"{_names(parts)} {'were' if len(parts) > 1 else 'was'} held back by {bound} at some load points"
        said.append(text + ".")
    if len(bounds) > most:
        said.append(f"{len(bounds) - most} more bounds: see the summary's last column.")
    return Headline(f"{m.workload}: " + " ".join(said), "held", (m.workload,),
                    tuple(r.configuration for r in m.rows if r.held))


def _nothing_called(m: Matrix) -> Headline:
    cells = [c for r in m.rows if not r.baseline for c in r.cells.values()]
    if not any(c.state == SAME for c in cells):  # nothing tested: never said as "no difference"
        whys = list(dict.fromkeys(c.why for c in cells if c.state == UNTESTED and c.why))
        return Headline(f"{m.workload}: no comparison with {m.baseline} could be tested"
                        + (f" ({'; '.join(whys)})." if whys else "."), "none", (m.workload,),
                        tuple(r.configuration for r in m.rows if not r.baseline))
    seen = [c.detectable for c in cells if c.state == SAME and c.detectable is not None]
    could = (f" (the smallest difference it could have detected, 80 % power: {_span(min(seen), max(seen))})"
             if seen else "")
    return Headline(f"{m.workload}: no difference from {m.baseline} was called in any metric{could}.", "none",
                    (m.workload,), tuple(r.configuration for r in m.rows if not r.baseline))


def headlines(ms: list[Matrix], most: int = MOST) -> list[Headline]:
    """The summary's sentences, best first (see the module text), at most ``most``."""
    ranked = _difference_headlines(ms)
    called = {w for h in ranked for w in h.workloads}
    held = {m.workload: _held(m) for m in ms}
    out: list[Headline] = []
    placed: set[str] = set()

    def after(w: str) -> None:
        if w not in placed:
            placed.add(w)
            if held[w] is not None:
                out.append(held[w])  # type: ignore[arg-type]

    for h in ranked:
        out.append(h)
        for w in h.workloads:
            after(w)
    for m in ms:
        if m.workload not in called and len(m.rows) > 1:
            out.append(_nothing_called(m))
        after(m.workload)
    return out[:most]
