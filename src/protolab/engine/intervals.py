"""Per-interval figures of a window, merged over every job and host, from fio's status snapshots.

Each status document (``--status-interval``) carries every job's cumulative counters and its
cumulative clat histogram bins, so one interval is the difference of two consecutive snapshots:
I/Os, bytes and histogram bins subtracted job by job (``status.window_jobs``), then summed
over jobs and hosts; the interval's percentiles come from the summed bins (never averaged).

Why status documents and not fio's ``log_hist_msec`` histogram logs: the status documents
are what every window already reads (a direct run live, a client run from the client's
print), they hold the same bins (fio's 1,856-bin clat histogram, the one the window's own
percentiles come from), and a direct run's are read the moment fio writes them, so each
interval is on disk within a poll. Histogram logs would be a second output per job and
per host (a client run's are written by each server on its own file system) to be found,
merged and kept in step with the statuses that place the window; fio flushes them in
blocks, so they would not bound what an interruption loses any better.
Pure functions, tested on captured real output.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.latency import merge_bins, percentiles
from .status import DIRECTIONS, Snapshot, elapsed_ms, int_bins, window_jobs


@dataclass(frozen=True)
class Interval:
    """One interval of a window: every job of every host, summed; latencies from the merged bins."""

    t_s: float  # the interval's end, seconds from the window's start
    seconds: float  # its length (the jobs' I/O time between the two statuses)
    iops: float
    mbps: float  # 1 MB = 10^6 bytes
    lat_mean_us: float | None
    lat_p95_us: float | None
    lat_p99_us: float | None
    ios: int = 0


def interval(pairs: list[tuple[Snapshot | None, Snapshot]], t_s: float) -> Interval:
    """The interval between each fio's (start, end) snapshots (start None: from the jobs' start), ending at ``t_s``.

    Rates are each fio's I/Os over its own I/O time in the interval, summed over fios (as
    ``status.iops_series`` and ``total_series`` do), so the series agrees with the window's.
    """
    iops = bps = 0.0
    ios = 0
    lat_n, lat_total = 0, 0.0
    hists = []
    seconds = 0.0
    for start, end in pairs:
        dt = (end.runtime_ms - (start.runtime_ms if start else 0.0)) / 1000.0
        seconds = max(seconds, dt)
        n = nbytes = 0
        for job in window_jobs(start, end):
            for d in DIRECTIONS:
                part = job.get(d)
                if not part:
                    continue
                n += int(part["total_ios"])
                nbytes += int(part["io_bytes"])
                clat = part["clat_ns"]
                lat_n += int(clat["N"])
                lat_total += float(clat["mean"]) * int(clat["N"])
                hists.append(int_bins(clat["bins"]))
        ios += n
        if dt > 0:
            iops += n / dt
            bps += nbytes / dt
    bins = merge_bins(hists)
    pct = percentiles(bins, (95.0, 99.0), in_order=True)
    us = lambda v: None if v is None else v / 1000.0  # noqa: E731
    return Interval(t_s=round(t_s, 3), seconds=round(seconds, 3), iops=iops, mbps=bps / 1e6,
                    lat_mean_us=lat_total / lat_n / 1000.0 if lat_n else None, lat_p95_us=us(pct["p95"]),
                    lat_p99_us=us(pct["p99"]), ios=ios)


def light(snap: Snapshot) -> Snapshot:
    """``snap`` without its histograms: what the series and the window's boundaries need of an old snapshot
    (a long run keeps one per interval; the bins are most of each)."""
    keep = ("runtime", "total_ios", "io_bytes")
    jobs = tuple({"jobname": j.get("jobname"), "job_runtime": j.get("job_runtime", 0),
                  **{d: {k: j[d].get(k, 0) for k in keep} for d in DIRECTIONS if d in j}} for j in snap.jobs)
    return Snapshot(snap.source, jobs)


def window_intervals(per: dict[str, list[Snapshot]], start: int, end: int, interval_s: float) -> list[Interval]:
    """Every interval between status ``start`` (-1: the jobs' start) and status ``end``, all fios merged
    (the k-th status of each fio comes at about the same time: see ``status.total_series``). A status at
    which no fio's I/O time has moved ends no interval: the next one spans both (as ``iops_series`` counts)."""
    out = []
    since = {src: start for src in per}  # each fio's status its next interval starts at
    for i in range(start + 1, end + 1):
        pairs = []
        for src, snaps in per.items():
            if i >= len(snaps):
                continue  # this fio has ended: it adds nothing
            a = snaps[min(since[src], len(snaps) - 1)] if since[src] >= 0 else None
            if snaps[i].runtime_ms > (a.runtime_ms if a else 0.0):
                pairs.append((a, snaps[i]))
                since[src] = i
        if pairs:  # the interval ends where the jobs' I/O time has got to since the window's start
            out.append(interval(pairs, (elapsed_ms(per, i) - (elapsed_ms(per, start) if start >= 0 else 0.0)) / 1000.0))
    return out
