"""What a fault did to the I/O (plan.faults), from each window's 10 ms timeline (engine.faultlog, the record's
``fault``): the stall, the span with no answer, the errors, the IOPS while the fault lasted, and the time back to
steady — per window, then per configuration over its repeats (mean, t interval).

- **stall**: the longest span of the window with no completion, ms (runs of 10 ms bins without one; a bin is empty
  only when no job logged a completion that overlaps it). The windows with no fault ("none") measure the same: the
  stall a configuration has anyway.
- **unanswered**: the longest span in which no I/O was answered, with data or an error: how long the application
  waited to hear. fio logs no failed I/O and times only its first error (the record's ``first_error_s``: after the
  last status that counted none, by the arrival of the first that counted one). So it is the stall, except that the
  run of bins without a completion in which that arrival (``by``) falls ends there. ``by`` is an upper bound of the
  error's time within a status interval (a status asked for while fio's job waits is answered once the job wakes, by
  what ended the wait), on the actions' clock (up to a status delivery behind the timeline's). The rest of that run
  counts as answered by the errors that followed (an initiator that fails I/O back fails what fio resubmits as fast;
  fio counts them but does not time them), so another run may then be the longest. With no error in a stall, the
  two agree.
- **errors**: the I/O errors fio counted and went on (continue_on_error), the first, and when it came after the
  fault began (by the first of fio's statuses that counted it: within a status interval).
- **degraded IOPS**: the mean IOPS over the bins the fault lasted, and as % of the same window's IOPS before it.
- **back to steady**: the SNIA PTS rule (analysis.steady: range ≤ 20 %, excursion ≤ 10 % of the mean) on the series
  after the fault's end, in samples of ``SAMPLE_MS``: the time from the fault's end to the first steady window of
  ``WINDOW`` samples; None when no window after it is steady ("not back within the window").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..plan.coordinates import Point, point_of
from ..results.faultwindow import gave_up_words
from ..results.records import CellRecord

#: The recovery's samples (ms of the 10 ms bins summed) and the steady window's length in samples.
SAMPLE_MS = 500
WINDOW = 5


@dataclass(frozen=True)
class FaultFigures:
    """One window's figures (see the module's text)."""

    stall_ms: float
    stall_at_s: float | None  # where the longest stall started, s into the window
    unanswered_ms: float  # the longest span with no I/O answered (a completion or fio's first error), ms
    errors: int
    first_error: str | None
    pre_iops: float | None  # mean IOPS before the fault (the whole window without one)
    degraded_iops: float | None
    degraded_pct: float | None
    recovery_s: float | None
    back: bool | None  # None: no fault, so nothing to come back from
    error_after_s: float | None = None  # s from the fault's start to the status that first counted an error


def faulted(rec: CellRecord) -> bool:
    """Whether a fault was planned in the record's window (not a "none" window, not a plan without faults)."""
    return rec.fault is not None and rec.fault.kind is not None


def _silences(iops: Sequence[float]) -> list[tuple[int, int]]:
    """Each run of bins without a completion, as (its first bin, the bin after it), in order."""
    runs, start = [], None
    for i, v in enumerate([*iops, 1]):  # a bin with a completion past the end closes a run to the window's end
        if v <= 0:
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i))
            start = None
    return runs


def longest_stall(iops: Sequence[float], step_ms: int) -> tuple[float, float | None]:
    """(ms, start s) of the longest run of bins without a completion (the first of equals); (0, None) when every
    bin has one."""
    runs = _silences(iops)
    if not runs:
        return 0, None
    first, end = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
    return (end - first) * step_ms, first * step_ms / 1000.0


def longest_unanswered(iops: Sequence[float], step_ms: int, error_by_s: float | None) -> int:
    """ms of the longest span with no I/O answered: the runs of bins without a completion, the one in which fio's
    first error came (by ``error_by_s``, s into the window; None: no error) ending at it."""
    best = 0
    for first, after in _silences(iops):
        begin, end = first * step_ms, after * step_ms
        if error_by_s is not None and begin <= error_by_s * 1000.0 < end:
            end = error_by_s * 1000.0
        best = max(best, round(end - begin))  # ms: the statuses' times have no finer
    return best


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def recovery(iops: Sequence[float], step_ms: int, end_s: float, *, sample_ms: int = SAMPLE_MS,
             window: int = WINDOW) -> float | None:
    """Seconds from ``end_s`` to the start of the first steady window of the series after it, or None."""
    from .steady import find_steady_window

    k = max(1, sample_ms // step_ms)
    first = math.ceil(end_s * 1000.0 / step_ms)
    after = iops[first:]
    samples = [sum(after[i:i + k]) / k for i in range(0, len(after) - k + 1, k)]
    if len(samples) < window:
        return None
    verdict = find_steady_window(samples, window=window)
    return round(verdict.window_start * k * step_ms / 1000.0 + (first * step_ms / 1000.0 - end_s), 3) \
        if verdict.steady else None


def figures(rec: CellRecord) -> FaultFigures | None:
    """A window's fault figures, or None when the record has no timeline."""
    fw = rec.fault
    if fw is None or not fw.iops:
        return None
    step = fw.step_ms
    stall, stall_at = longest_stall(fw.iops, step)
    unanswered = longest_unanswered(fw.iops, step, fw.first_error_s[1] if fw.first_error_s is not None else None)
    span = fw.span_s()
    if span is None:
        return FaultFigures(stall, stall_at, unanswered, fw.errors, fw.first_error, _mean(fw.iops), None, None, None,
                            None)
    a, b = (max(0, min(len(fw.iops), round(t * 1000.0 / step))) for t in span)
    pre, during = _mean(fw.iops[:a]), _mean(fw.iops[a:b])
    pct = 100.0 * during / pre if pre and during is not None else None
    back = recovery(fw.iops, step, span[1])
    after = round(fw.first_error_s[1] - span[0], 3) if fw.first_error_s is not None else None
    return FaultFigures(stall, stall_at, unanswered, fw.errors, fw.first_error, pre, during, pct, back,
                        back is not None, after)


@dataclass(frozen=True)
class Estimate:
    """A mean over repeats with its 95 % t interval (NaN bounds with fewer than 2 values)."""

    mean: float
    low: float
    high: float
    n: int


def estimate(values: Iterable[float], floor: float | None = 0.0) -> Estimate | None:
    """The mean of ``values`` and its 95 % t interval (its low end at least ``floor``: a stall, a count, a share or a
    time is never negative; None: unbounded, a difference of times); None without any."""
    v = [float(x) for x in values]
    if not v:
        return None
    m = sum(v) / len(v)
    if len(v) < 2:
        return Estimate(m, math.nan, math.nan, 1)
    from scipy import stats as sps

    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))
    half = float(sps.t.ppf(0.975, len(v) - 1)) * sd / math.sqrt(len(v))
    return Estimate(m, m - half if floor is None else max(floor, m - half), m + half, len(v))


@dataclass(frozen=True)
class FaultRow:
    """One configuration at one workload and point (the fault is one of its coordinates), over its repeats."""

    workload: str
    point: Point
    configuration: str
    fault: str
    kind: str | None
    at_s: float | None
    duration_s: float | None
    port: int | None
    repeats: int
    stall_ms: Estimate | None
    errors: Estimate | None
    degraded_pct: Estimate | None
    degraded_iops: Estimate | None
    recovery_s: Estimate | None
    not_back: int  # repeats not back to steady within the window
    first_error: str | None
    gave_up: int = 0  # repeats whose fio gave up before the window's end (an error of the initiator)
    gave_up_with: str | None = None  # the first such error
    not_done: int = 0  # windows whose fault's control failed (the fault did not happen): left out of the figures
    not_done_with: str | None = None  # the first such control's error
    per_repeat: list[FaultFigures] = field(default_factory=list)
    error_after_s: Estimate | None = None  # the first error's time after the fault began (see FaultFigures)
    unanswered_ms: Estimate | None = None  # the longest span with no I/O answered (see FaultFigures)


def rows(records: Iterable[CellRecord]) -> list[FaultRow]:
    """Each configuration's fault figures at each workload and point, over its repeats (ok windows only)."""
    groups: dict[tuple[str, Point, str], list[tuple[CellRecord, FaultFigures]]] = {}
    undone: dict[tuple[str, Point, str], list[str]] = {}
    records = list(records)
    for r in records:
        f = figures(r) if not r.failed else None
        if f is None:
            continue
        key = (r.workload, point_of(r), r.configuration)
        groups.setdefault(key, [])
        failed = [a.error for a in r.fault.actions if a.error] if r.fault is not None else []
        if failed:  # the fault was not done: this window measured no fault, and says nothing of one
            undone.setdefault(key, []).append(failed[0])
        else:
            groups[key].append((r, f))
    out = []
    for (w, p, c), got in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if not got:
            continue
        fw = got[0][0].fault
        assert fw is not None
        figs = [f for _, f in got]
        out.append(FaultRow(
            w, p, c, fw.fault, fw.kind, fw.at_s, fw.duration_s, fw.port, len(figs),
            estimate(f.stall_ms for f in figs), estimate(f.errors for f in figs),
            estimate(f.degraded_pct for f in figs if f.degraded_pct is not None),
            estimate(f.degraded_iops for f in figs if f.degraded_iops is not None),
            estimate(f.recovery_s for f in figs if f.recovery_s is not None),
            sum(1 for f in figs if f.back is False), next((f.first_error for f in figs if f.first_error), None),
            sum(1 for r, _ in got if r.fault is not None and r.fault.ended_early),
            next((r.fault.ended_early for r, _ in got if r.fault is not None and r.fault.ended_early), None),
            len(undone.get((w, p, c), [])), next(iter(undone.get((w, p, c), [])), None), figs,
            estimate(f.error_after_s for f in figs if f.error_after_s is not None),
            estimate(f.unanswered_ms for f in figs)))
    for (w, p, c), errors in sorted(undone.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if not groups.get((w, p, c)):  # no window had the fault: a row that says so, without figures
            r = next(x for x in records if (x.workload, point_of(x), x.configuration) == (w, p, c))
            fw = r.fault
            assert fw is not None
            out.append(FaultRow(w, p, c, fw.fault, fw.kind, fw.at_s, fw.duration_s, fw.port, 0, None, None, None,
                                None, None, 0, None, 0, None, len(errors), errors[0]))
    return out


def seconds_words(e: Estimate | None, scale: float = 1.0) -> str:
    """'5.1 s (4.9–5.3)', '0.21 s' (one repeat, or an interval as narrow as the digits), '–'."""
    if e is None:
        return "–"

    def s(v: float) -> str:
        v *= scale
        return f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}"

    if math.isnan(e.low) or s(e.low) == s(e.high):  # one repeat, or repeats alike to the digits shown
        return f"{s(e.mean)} s"
    return f"{s(e.mean)} s ({s(e.low)}–{s(e.high)})"



def what_happened(r: FaultRow) -> str:
    """'port 0's link went down for 5 s', 'the server was killed and restarted 5 s later', 'the array stalled for
    5 s'."""
    d = f"{r.duration_s:g} s" if r.duration_s is not None else "?"
    if r.kind == "link_down":
        return (f"port {r.port}'s link went down for {d}" if r.port is not None else
                f"every storage port's link went down for {d}")
    if r.kind == "server_restart":
        return f"the server was killed and started again {d} later"
    return f"the array stalled for {d}"


def clause(r: FaultRow, control: FaultRow | None) -> str:
    """One configuration's part of a sentence: 'iscsi stalled 5.1 s (4.9–5.3), 0 errors, 48 % of its IOPS while it
    lasted, back to steady 1.5 s after it (0.2 s with no fault)'; where errors answered its I/O within the stall,
    'iscsi had no answer for 4.6 s (then its I/O failed with errors) and no completion for 8.0 s, …'."""
    if not r.repeats:
        return (f"{r.configuration}: the fault was not done in any of its {r.not_done} windows (the lab's control "
                f"failed: {(r.not_done_with or '')[:200]}), so nothing is measured of it")
    stall, unanswered = seconds_words(r.stall_ms, 1e-3), seconds_words(r.unanswered_ms, 1e-3)
    out = f"{r.configuration} stalled {stall}" if r.unanswered_ms is None or unanswered == stall else (
        f"{r.configuration} had no answer for {unanswered} (then its I/O failed with errors) and no completion for "
        f"{stall}")
    out += " (to the window's end)" if r.repeats and r.gave_up == r.repeats else ""
    if r.not_done:
        out += (f" (over {r.repeats} windows; the fault was not done in {r.not_done} more: "
                f"{(r.not_done_with or '')[:160]})")
    errs = r.errors.mean if r.errors else 0.0
    if errs or not r.gave_up:
        out += ", no I/O error" if errs == 0 else f", {errs:,.1f} I/O errors per window (first: {r.first_error}" + (
            f", by {seconds_words(r.error_after_s)} after the fault began)" if r.error_after_s is not None else ")")
    if r.gave_up:
        out += f", fio gave up in {r.gave_up} of {r.repeats} repeats ({gave_up_words(r.gave_up_with)})"
    if r.degraded_pct is not None:
        out += f", {r.degraded_pct.mean:.0f} % of its IOPS while it lasted"
    if r.repeats and r.not_back == r.repeats:
        out += ", not back to steady within the window"
    elif r.recovery_s is not None:
        out += f", steady again {seconds_words(r.recovery_s)} after it"
        out += f" ({r.not_back} of {r.repeats} repeats not back)" if r.not_back else ""
    if control is not None and control.stall_ms is not None:
        out += f" (with no fault its longest stall was {seconds_words(control.stall_ms, 1e-3)})"
    return out


def sentences(fault_rows: list[FaultRow]) -> list[tuple[str, str, str]]:
    """Per workload, point and fault: (workload, point label, a sentence comparing the configurations, the one with
    the longest stall first)."""
    control = {(r.workload, r.point.get("load"), tuple((k, v) for k, v in r.point.outer if k != "fault"),
                r.configuration): r for r in fault_rows if r.kind is None}
    groups: dict[tuple[str, Point], list[FaultRow]] = {}
    for r in fault_rows:
        if r.kind is not None:
            groups.setdefault((r.workload, r.point), []).append(r)
    out = []
    for (w, p), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        group.sort(key=lambda r: -(r.stall_ms.mean if r.stall_ms else 0.0))
        outer = tuple((k, v) for k, v in p.outer if k != "fault")
        parts = [clause(r, control.get((w, p.get("load"), outer, r.configuration))) for r in group]
        first = group[0]
        at = f" at {first.at_s:g} s" if first.at_s is not None else ""
        out.append((w, p.label, f"After {first.fault} ({what_happened(first)}{at}): " + "; ".join(parts) + "."))
    return out
