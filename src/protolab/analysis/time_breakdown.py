"""Where each microsecond of the mean goes (issue 46): fio's mean latency split at the times measured below it.

Four times nest along one I/O's path, each a mean per request: fio's completion latency (the top: in a window with a
capture, fio's mean over the captured sub-window, ``ServiceTimes.lat_captured_us`` — the I/Os the capture saw, which
its own cost slows — else the window's), the request→reply time the capture saw at the load host's port
(``ServiceTimes``, role ``host``), the same at the storage server's port (role ``server``), and the device model's
queue + service time (``DeviceTime``; in a window with a capture, over the capture's span: ``ServiceTimes.device``).
They are the *levels*; a *part* is the time between two levels:

- initiator = fio's mean − the host's SRT (fio, the initiator's stack, the host's kernel up to its port);
- network = the host's SRT − the server's SRT (the wire and the switch, both ways);
- server = the server's SRT − the device's time (the server's kernel and process);
- device = the device model's mean queue + service time per request, × its requests per fio I/O in the window (a
  request is the daemon's: fewer than fio's I/Os where a page cache above it answers, so the device's time per I/O
  is less than per request; the lab's O_DIRECT paths give one per I/O; over a capture's span, its request rate over
  fio's IOPS there). A page cache's readahead beside the I/Os (nbdkit's file plugin) counts too: then the part is
  the device's busy time per I/O, more than the I/O's own (and the check may say so).

A level not measured (no capture: no host or server SRT; no device model: no device time) joins the two parts beside
it into one, named by both ("initiator + network", "server + device"). A configuration with no wire (a local path,
``wired`` False) has no network and no server: those parts are absent (zero), not unmeasured, so its parts are the
initiator and the device.

Per workload, point (every point coordinate: analysis.coordinates) and configuration, each part is the mean over the
repeats that measured both its levels, with its 95 % t interval over them: with the capture on the last repeat only
(method.breakdown), the parts the capture bounds rest on one repeat each — one repeat, no interval — while the device
part (always read) rests on every repeat. The check: the parts (a part below zero, levels out of order, counted as
zero) add up to the fio mean the first part is taken from (over the same repeats); ``residual_pct`` is how far they
miss it, in %: levels out of order, or lower parts from other repeats than the top's. ``RESIDUAL_PCT`` is issue 46's
acceptance bound for that check, not a verdict on a comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from ..plan.coordinates import Point, point_of
from ..results.records import CellRecord
from .fault_figures import Estimate, estimate, faulted

COMPONENTS = ("initiator", "network", "server", "device")
#: The check's bound (issue 46: "the components add up to fio's mean within 5 %"): a larger residual is flagged.
RESIDUAL_PCT = 5.0

Levels = tuple[float | None, float | None, float | None, float | None, float]  # fio, host, server, device, 0


def levels(rec: CellRecord, wired: bool = True) -> Levels | None:
    """The record's levels (module text): fio's mean, the host's and the server's SRT, the device's time, 0; None
    without fio's mean. A configuration with no wire has its host and server levels at the device's (or unknown)."""
    fio = rec.result.lat_mean_us
    if fio is None or rec.failed:
        return None
    dev = rec.device_time
    device = None
    if dev is not None and dev.requests > 0:
        ios = rec.result.read.ios + rec.result.write.ios
        device = (dev.queue_us + dev.service_us) * (dev.requests / ios if ios > 0 else 1.0)
    host = server = None
    st = rec.service_times
    if not wired:
        host = server = device
    elif st is not None:
        for p in st.points:
            if p.srt_us is not None and p.pairs > 0:
                host = p.srt_us if p.role == "host" else host
                server = p.srt_us if p.role == "server" else server
        if (host is not None or server is not None) and st.lat_captured_us is not None:
            fio = st.lat_captured_us  # the I/Os the capture saw: its own cost slows them (iops_captured)
            if st.device is not None and st.device.requests > 0:  # … and the device's time while it ran
                rate = st.device.requests / st.seconds if st.seconds > 0 else None  # requests per I/O: as rates
                per_io = rate / st.iops_captured if rate and st.iops_captured else 1.0
                device = (st.device.queue_us + st.device.service_us) * per_io
    return (fio, host, server, device, 0.0)


def part_name(first: int, end: int, wired: bool = True) -> str:
    """The name of the part spanning components ``first``…``end - 1``: 'initiator', 'server + device'; a
    configuration with no wire leaves out its network and server."""
    names = [c for i, c in enumerate(COMPONENTS[first:end], first) if wired or COMPONENTS[i] not in ("network",
                                                                                                      "server")]
    return " + ".join(names)


def spans(known: Iterable[int], wired: bool = True) -> list[tuple[int, int]]:
    """The parts between consecutive known levels (indices 0…4), leaving out a part with no component (a local
    path's network and server)."""
    ks = sorted(set(known) | {0, 4})
    return [(a, b) for a, b in zip(ks, ks[1:]) if part_name(a, b, wired)]


@dataclass(frozen=True)
class Part:
    """One part of one record: its name and µs per I/O (below zero: its two levels out of order)."""

    name: str
    us: float


@dataclass(frozen=True)
class RecordBreakdown:
    """A record's parts (they add up to fio's mean but for parts below zero) and its residual."""

    lat_mean_us: float
    parts: list[Part]
    residual_pct: float  # the parts, a part below zero counted as zero, against fio's mean (%)

    @property
    def measured(self) -> bool:
        """Whether any level below fio's was measured (else the record says nothing of where its time went)."""
        return len(self.parts) > 1


def of_record(rec: CellRecord, wired: bool = True) -> RecordBreakdown | None:
    """One window's breakdown (module text), or None without fio's mean."""
    lv = levels(rec, wired)
    if lv is None:
        return None
    parts = []
    for a, b in spans([i for i, v in enumerate(lv) if v is not None], wired):
        top, bottom = lv[a], lv[b]
        assert top is not None and bottom is not None
        parts.append(Part(part_name(a, b, wired), top - bottom))
    total = lv[0]
    assert total is not None
    added = sum(max(0.0, p.us) for p in parts)
    return RecordBreakdown(total, parts, 100.0 * (added - total) / total if total else math.nan)


@dataclass(frozen=True)
class PartEstimate:
    """One part of a cell over the repeats that measured it: mean and 95 % t interval (NaN bounds: one repeat)."""

    name: str
    first: int  # the components it spans, COMPONENTS[first:end]
    end: int
    us: Estimate

    @property
    def tested(self) -> bool:
        """Whether it has an interval (two repeats or more)."""
        return self.us.n >= 2 and not math.isnan(self.us.low)


@dataclass(frozen=True)
class BreakdownRow:
    """One configuration at one workload and point: its parts over repeats, fio's mean over every repeat, and the
    check."""

    workload: str
    point: Point
    configuration: str
    baseline: bool
    wired: bool
    lat_mean_us: Estimate  # fio's mean over every ok repeat
    parts: list[PartEstimate]
    residual_pct: float  # the parts' means (below zero: zero) against the fio mean the first part is of, %
    captured: int  # repeats with a capture at either port
    per_repeat: list[Levels] = field(default_factory=list)  # each repeat's levels (for the comparisons)
    notes: list[str] = field(default_factory=list)  # the capture's points' own words (why one has no mean)
    lat_captured_us: Estimate | None = None  # fio's mean over the captured sub-windows (ServiceTimes.lat_captured_us)

    @property
    def flagged(self) -> bool:
        """The parts miss fio's mean by more than the check allows (``RESIDUAL_PCT``)."""
        return not math.isnan(self.residual_pct) and abs(self.residual_pct) > RESIDUAL_PCT

    @property
    def not_measured(self) -> list[str]:
        """The components this cell could not tell apart (folded into a neighbour), in path order."""
        return [c for p in self.parts if p.end - p.first > 1 for c in p.name.split(" + ")]

    def interval_words(self) -> str:
        """How the parts' intervals were formed, honestly: 'initiator, network and server: one repeat (the
        capture's), no interval; device: over 3 repeats, 95 % t interval'."""
        groups: dict[str, list[str]] = {}
        for p in self.parts:
            how = (f"over {p.us.n} repeats, 95 % t interval" if p.tested else
                   "one repeat, no interval" if p.us.n == 1 else f"over {p.us.n} repeats, no interval")
            groups.setdefault(how, []).append(p.name)
        return "; ".join(f"{_and(names)}: {how}" for how, names in groups.items())


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _row(workload: str, point: Point, configuration: str, recs: list[CellRecord], wired: bool) -> BreakdownRow | None:
    per = [lv for r in recs if (lv := levels(r, wired)) is not None]
    if not per:
        return None
    known = {i for lv in per for i, v in enumerate(lv) if v is not None}
    parts = []
    for a, b in spans(known, wired):
        vals = [lv[a] - lv[b] for lv in per if lv[a] is not None and lv[b] is not None]  # type: ignore[operator]
        est = estimate(vals, floor=None)
        if est is not None:
            parts.append(PartEstimate(part_name(a, b, wired), a, b, est))
    lat = estimate([r.result.lat_mean_us for r in recs if r.result.lat_mean_us is not None], floor=None)
    assert lat is not None
    top = [lv[0] for lv in per if parts and lv[parts[0].end] is not None]  # the fio means the first part is of
    mean_top = sum(top) / len(top) if top else lat.mean  # type: ignore[arg-type]
    residual = (100.0 * (sum(max(0.0, p.us.mean) for p in parts) - mean_top) / mean_top if mean_top else math.nan)
    captured = sum(1 for r in recs if r.service_times is not None and not r.failed)
    during = estimate([r.service_times.lat_captured_us for r in recs if r.service_times is not None
                       and r.service_times.lat_captured_us is not None], floor=None)
    notes = list(dict.fromkeys(f"{p.role} ({p.point}): {p.note}" for r in recs if r.service_times is not None
                               for p in r.service_times.points if p.note))
    return BreakdownRow(workload, point, configuration, recs[0].baseline, wired, lat, parts, residual, captured, per,
                        notes, during)


def rows(records: Iterable[CellRecord], wired: dict[str, bool] | None = None) -> list[BreakdownRow]:
    """Each configuration's breakdown at each workload and point, over its ok repeats; only cells where a level below
    fio's was measured (a device time or a capture); a window with a fault is its fault's (analysis.fault_figures),
    not a time to break down. ``wired``: configuration → whether a wire lies in its path (unknown: True)."""
    wired = wired or {}
    groups: dict[tuple[str, Point, str], list[CellRecord]] = {}
    for r in records:
        if not r.failed and not faulted(r):
            groups.setdefault((r.workload, point_of(r), r.configuration), []).append(r)
    out = []
    for (w, p, c), recs in sorted(groups.items(), key=lambda kv: kv[0]):
        if not any(r.device_time is not None or r.service_times is not None for r in recs):
            continue
        row = _row(w, p, c, sorted(recs, key=lambda r: r.repeat), wired.get(c, True))
        if row is not None and len(row.parts) > 1:
            out.append(row)
    return out


@dataclass(frozen=True)
class Shift:
    """One part's change from the baseline to a configuration at one point, µs per I/O: mean and 95 % Welch t
    interval (NaN: fewer than two repeats on a side)."""

    name: str
    us: float
    low: float
    high: float
    n_base: int
    n_other: int

    @property
    def tested(self) -> bool:
        """Whether it has an interval."""
        return not math.isnan(self.low)


def _welch(base: list[float], other: list[float]) -> tuple[float, float, float]:
    """(mean difference other − base, low, high): the 95 % Welch t interval; NaN bounds below two a side."""
    d = sum(other) / len(other) - sum(base) / len(base)
    if min(len(base), len(other)) < 2:
        return d, math.nan, math.nan
    from scipy import special

    def var(v: list[float]) -> float:
        m = sum(v) / len(v)
        return sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v)

    vb, vo = var(base), var(other)
    se = math.sqrt(vb + vo)
    if se == 0.0:
        return d, d, d
    df = (vb + vo) ** 2 / (vb ** 2 / (len(base) - 1) + vo ** 2 / (len(other) - 1))
    half = float(special.stdtrit(df, 0.975)) * se
    return d, d - half, d + half


def shifts(base: BreakdownRow, other: BreakdownRow) -> list[Shift]:
    """Each part's change from ``base`` to ``other``, on the levels both measured (a part one of them folds is
    compared folded, under its wider name); each side's values from its repeats that measured both levels."""
    def known(row: BreakdownRow) -> set[int]:
        return {i for lv in row.per_repeat for i, v in enumerate(lv) if v is not None}

    common = known(base) & known(other)
    out = []
    for a, b in spans(common, True):
        vb = [lv[a] - lv[b] for lv in base.per_repeat if lv[a] is not None and lv[b] is not None]  # type: ignore
        vo = [lv[a] - lv[b] for lv in other.per_repeat if lv[a] is not None and lv[b] is not None]  # type: ignore
        if not vb or not vo:
            continue
        d, lo, hi = _welch(vb, vo)
        out.append(Shift(part_name(a, b, True), d, lo, hi, len(vb), len(vo)))
    return out
