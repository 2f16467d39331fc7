"""The crossover: at which swept array speeds (or link rates) a configuration is within a band of the baseline's IOPS,
and a model that predicts it from each protocol's added time per I/O.

Pure functions over `Obs` (one measured window: what cells.csv has of it), so that a report and a reader of
cells.csv alone compute the same figures (`Obs.of_record`, `Obs.of_row`).

**Crossover.** At each point (workload, load point, swept value) each configuration's IOPS are compared with the
baseline's: the ratio of medians and its 95 % percentile-bootstrap interval (analysis.stats.compare, the
report's own). The claim "within ±b % of the baseline" *holds* there when the whole interval lies inside
[1 − b, 1 + b], *does not hold* when it lies wholly outside, and is *undecided* when it reaches across an edge;
with fewer than 3 repeats a side it is *not tested*. Nothing is said between measured values.

**Prediction.** At one reference service time (the lowest swept, at 1 outstanding I/O per stream) each protocol's
added time per I/O is o = mean latency(protocol) − mean latency(baseline). The direct path's own time at a
point is d = its mean latency there − s. With N outstanding I/Os in all and P servers of service time s, a
closed loop's throughput is bounded by min(N / (s + d + o), P / s) — the asymptotic bounds of operational analysis
(Lazowska et al., "Quantitative System Performance", 1984, ch. 5: no queueing delay below saturation, the busiest
resource's rate above it) — so the predicted IOPS ratio is

    min(N / (s + d + o), P / s) / min(N / (s + d), P / s)

which is (s + d) / (s + d + o) while the array is not saturated (at 1 OIO per stream always, for N streams), and
goes to 1 as the array saturates and hides the protocol. What the bound leaves out: queueing below saturation (the
ratio is then a little closer to 1 than predicted), and any other limit (CPU, wire) that the baseline does not share.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev
from typing import Any

from ..plan.coordinates import load_label, value_text
from .stats import MIN_REPEATS, compare

HOLDS, FAILS, UNDECIDED, NOT_TESTED = "holds", "does not hold", "undecided", "not tested"
#: protolab's own band where a plan gives none (no seed claim on IOPS, no sweep.crossover_band): TR-3808's "within
#: 9 %" (S1), the only protocol-cost band the seeds give for IOPS.
DEFAULT_BAND_PCT = 9.0


@dataclass(frozen=True)
class Obs:
    """One measured window as the crossover reads it."""

    workload: str
    configuration: str
    axis: int | None  # the swept value (service time in µs, link rate in Mbit/s); None without a sweep
    load: str  # the load point's label, '1×4×4=16' (plan.coordinates.load_label)
    oio_per_stream: int
    total_oio: int
    iops: float
    lat_mean_us: float

    @classmethod
    def of_record(cls, rec: Any, axis: str = "service_time") -> "Obs":
        v = rec.coords.get(axis)
        r = rec.result
        load = load_label(rec.hosts, rec.streams_per_host, rec.oio_per_stream, rec.total_oio)
        return cls(rec.workload, rec.configuration, None if v is None else int(v), load, rec.oio_per_stream,
                   rec.total_oio, float(r.iops), float(r.lat_mean_us))

    @classmethod
    def of_row(cls, row: Mapping[str, str], axis: str = "service_time") -> "Obs":
        """From a cells.csv row (its text as csv.DictReader gives it)."""
        v = row.get(axis) or ""
        n = [int(row[k]) for k in ("hosts", "streams_per_host", "oio_per_stream", "total_oio")]
        return cls(row["workload"], row["configuration"], int(v) if v else None, load_label(*n), n[2], n[3],
                   float(row["iops"]), float(row["lat_mean_us"]))


def parallelism_of(device_model: str) -> int | None:
    """P from cells.csv's `device_model` ('500us ×64, no throughput cap, no cache'); None when it names none."""
    m = re.search(r"×(\d+)", device_model or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class AtPoint:
    """One configuration against the baseline at one swept value and load point."""

    workload: str
    configuration: str
    axis: int
    load: str
    total_oio: int
    ratio: float
    ci_low: float
    ci_high: float
    n: int  # repeats on the smaller side
    outcome: str
    predicted: float | None = None  # the model's IOPS ratio (service-time sweeps)
    saturated: bool = False  # the baseline reached ≥ 90 % of the array's P / s there (measured)


def outcome(ratio: float, lo: float, hi: float, n: int, band: float) -> str:
    """The claim "within ±band" at one point, from the ratio's interval (see the module's text)."""
    if n < MIN_REPEATS or math.isnan(ratio):
        return NOT_TESTED
    if 1 - band <= lo and hi <= 1 + band:
        return HOLDS
    if hi < 1 - band or lo > 1 + band:
        return FAILS
    return UNDECIDED


def _groups(obs: Iterable[Obs]) -> dict[tuple[str, int, str, str], list[Obs]]:
    out: dict[tuple[str, int, str, str], list[Obs]] = {}
    for o in obs:
        if o.axis is not None:
            out.setdefault((o.workload, o.axis, o.load, o.configuration), []).append(o)
    return out


def crossover(obs: Sequence[Obs], baseline: str, band: float, *, parallelism: int | None = None,
              added: Mapping[tuple[str, str], "Added"] | None = None) -> list[AtPoint]:
    """Every configuration against ``baseline`` at every swept value and load point (``band``: a fraction, 0.09).
    With ``added`` (from `added_times`) each point carries the model's prediction; ``parallelism``: the array's
    servers (None: the saturation bound is left out)."""
    groups = _groups(obs)
    out = []
    for (w, axis, load, c), xs in sorted(groups.items()):
        base = groups.get((w, axis, load, baseline))
        if c == baseline or not base:
            continue
        cmp = compare([b.iops for b in base], [x.iops for x in xs])
        n = min(len(base), len(xs))
        ratio, lo, hi = cmp.ratio, cmp.ci_low, cmp.ci_high
        if n < MIN_REPEATS:  # no interval: the repeats' range of the ratio of medians is shown instead
            lo, hi = ratio, ratio
        total = xs[0].total_oio
        d_lat = fmean(b.lat_mean_us for b in base)
        pred = None
        a = (added or {}).get((w, c))
        if a is not None:
            pred = predicted_ratio(axis, d_lat - axis, a.o_us, total, parallelism)
        sat = bool(parallelism and axis and fmean(b.iops for b in base) >= 0.9 * parallelism * 1e6 / axis)
        out.append(AtPoint(w, c, axis, load, total, ratio, lo, hi, n, outcome(ratio, lo, hi, n, band), pred, sat))
    return out


def predicted_ratio(s_us: float, d_us: float, o_us: float, total_oio: int, parallelism: int | None) -> float:
    """The model's IOPS ratio (protocol / baseline) at service time ``s_us`` (see the module's text)."""
    cap = parallelism * 1e6 / s_us if parallelism and s_us > 0 else math.inf
    base = min(total_oio * 1e6 / max(s_us + d_us, 1e-9), cap)
    other = min(total_oio * 1e6 / max(s_us + d_us + o_us, 1e-9), cap)
    return other / base


@dataclass(frozen=True)
class Added:
    """A configuration's added time per I/O over the baseline, at one service time and 1 outstanding I/O per
    stream: o (µs) with its 95 % Welch interval of the difference of mean latencies, and the baseline's d there."""

    workload: str
    configuration: str
    at_us: int | None  # the reference service time (None: no sweep — the run's one array)
    load: str
    o_us: float
    lo_us: float
    hi_us: float
    d_us: float  # the baseline's mean latency there less the service time
    n: int
    oio_per_stream: int = 1  # the reference load point's depth per stream (1 unless the run has no such point)
    total_oio: int = 1


def added_times(obs: Sequence[Obs], baseline: str) -> dict[tuple[str, str], Added]:
    """Per (workload, configuration): o at the reference point — the lowest swept value (or the run's one array)
    and, there, the baseline's load point with the fewest outstanding I/Os, among those at 1 per stream when there
    are any (else o includes the queueing of that depth: `Added.oio_per_stream` says which)."""
    out: dict[tuple[str, str], Added] = {}
    for w in sorted({o.workload for o in obs}):
        mine = [o for o in obs if o.workload == w]
        ref_axis = min((o.axis for o in mine if o.axis is not None), default=None)
        at = [o for o in mine if o.axis == ref_axis and o.configuration == baseline]
        if not at:
            continue
        ones = [o for o in at if o.oio_per_stream == 1] or at
        ref = min(ones, key=lambda o: (o.total_oio, o.load))  # the fewest outstanding I/Os
        load, per_stream = ref.load, ref.oio_per_stream
        at = [o for o in mine if o.axis == ref_axis]
        base = [o.lat_mean_us for o in at if o.load == load and o.configuration == baseline]
        for c in sorted({o.configuration for o in at} - {baseline}):
            lat = [o.lat_mean_us for o in at if o.load == load and o.configuration == c]
            if not lat:
                continue
            o_us = fmean(lat) - fmean(base)
            lo, hi = _welch_interval(base, lat)
            out[(w, c)] = Added(w, c, ref_axis, load, o_us, o_us + lo, o_us + hi, fmean(base) - (ref_axis or 0),
                                min(len(base), len(lat)), per_stream, ref.total_oio)
    return out


def _welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The 95 % Welch half-interval of mean(b) − mean(a), as (−h, +h); (nan, nan) with fewer than 2 a side."""
    if min(len(a), len(b)) < 2:
        return math.nan, math.nan
    va, vb = stdev(a) ** 2 / len(a), stdev(b) ** 2 / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0, 0.0
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    from scipy import stats as sps  # only where an added time has its interval: the report loads no scipy.stats

    h = float(sps.t.ppf(0.975, df)) * se
    return -h, h


def matters_below_us(o_us: float, band: float) -> float:
    """The direct path's latency (s + d, µs) below which an added ``o_us`` costs more than ``band`` of IOPS at 1 OIO:
    o / (L + o) > b  ⇔  L < o (1 − b) / b."""
    return max(0.0, o_us) * (1 - band) / band


def cost_at(o_us: float, latency_us: float) -> float:
    """The fraction of IOPS an added ``o_us`` costs where the direct path's latency is ``latency_us`` (1 OIO)."""
    return o_us / (latency_us + o_us) if latency_us + o_us > 0 else math.nan


def _change(p: AtPoint) -> str:
    """'31 % (24–38 %) fewer IOPS' from a point's ratio and interval."""
    if p.ratio <= 1:
        return (f"{100 * (1 - p.ratio):.0f} % ({100 * (1 - p.ci_high):.0f}–{100 * (1 - p.ci_low):.0f} %) "
                "fewer IOPS")
    return f"{100 * (p.ratio - 1):.0f} % ({100 * (p.ci_low - 1):.0f}–{100 * (p.ci_high - 1):.0f} %) more IOPS"


def sentence(points: Sequence[AtPoint], baseline: str, band: float, axis: str = "service_time") -> str:
    """One configuration's crossover at one workload and load point, in words: where "within ±band of the baseline"
    holds (as a run of measured values from the top, when it is one) and, at every other measured value, what was
    measured — never a word between measured values."""
    pts = sorted(points, key=lambda p: p.axis)
    if not pts:
        return ""
    name, word = pts[0].configuration, axis.replace("_", " ")
    within = f"within {100 * band:g} % of {baseline}"
    tail = 0  # the longest run of holds from the top
    for p in reversed(pts):
        if p.outcome != HOLDS:
            break
        tail += 1
    parts = []
    if tail == len(pts):
        return f"{name} {within} at every {word} measured ({', '.join(value_text(axis, p.axis) for p in pts)})."
    if tail == 1:
        parts.append(f"{within} at {value_text(axis, pts[-1].axis)}, the highest measured")
    elif tail:
        parts.append(f"{within} at every {word} ≥ {value_text(axis, pts[-tail].axis)} measured")
    rest = pts[:len(pts) - tail]
    for p in rest:
        at = value_text(axis, p.axis)
        sat = " (array saturated)" if p.saturated else ""
        if p.outcome == NOT_TESTED:
            parts.append(f"not tested at {at} ({p.n} repeats; {MIN_REPEATS} needed)")
        elif p.outcome == HOLDS:
            parts.append(f"{within} at {at}{sat}")
        elif p.outcome == FAILS:
            parts.append(f"{_change(p)} at {at}{sat}")
        else:
            parts.append(f"undecided at {at}{sat}: {p.ratio:.2f} ({p.ci_low:.2f}–{p.ci_high:.2f}) × {baseline}'s "
                         f"IOPS, reaching across ±{100 * band:g} %")
    return f"{name} " + "; ".join(parts) + "."


def band_of(plan: Any) -> tuple[float, str]:
    """The crossover's band (a fraction) and where it comes from: the plan's first seed claim on IOPS against the
    baseline that bounds a loss ("within 9 %", or "at least −9 %": its 9 %), else [sweep] crossover_band, else
    protolab's DEFAULT_BAND_PCT."""
    for f in getattr(plan, "seed_findings", None) or []:
        for c in f.claims if f.compare == "baseline" else []:
            loss = c.within if c.within is not None else (-c.at_least if (c.at_least or 0) < 0 else None)
            if loss is not None and c.reference is None and "iops" in f.claim_metrics(c):
                return loss / 100, f"the seed's claim \"{f.said.strip()}\""
    sweep = getattr(plan, "sweep", None)
    if sweep is not None and sweep.crossover_band is not None:
        return sweep.crossover_band / 100, "the plan's sweep.crossover_band"
    return DEFAULT_BAND_PCT / 100, f"protolab's default ±{DEFAULT_BAND_PCT:g} % (TR-3808's band; no claim given)"
