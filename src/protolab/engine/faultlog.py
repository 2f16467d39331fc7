"""The fine timeline of a faulted cell (plan.faults): fio's per-job IOPS and latency logs averaged per 10 ms, merged
into one series relative to the measured window's start, and the I/O errors fio counted without stopping.

A faulted cell's job file asks each job for ``write_iops_log`` and ``write_lat_log`` with ``log_avg_msec = 10`` and
``continue_on_error = all`` (`log_options`). fio then writes, per job N, ``PREFIX_iops.N.log`` and
``PREFIX_clat.N.log`` (and slat, lat): lines ``time_ms, value, direction, 0, 0`` — the time since the job started,
the job's IOPS over the last 10 ms (latency: the mean completion latency of those I/Os, ns). fio writes an entry only
for a period in which an I/O of that direction completed (stat.c, ``__add_samples``: "No entries for interval"),
so a period without entries had no completion: the stall is the longest run of such periods.

Each job's times are placed on the window's clock by the warm-up's length in the jobs' I/O time (what
``window.run_window`` counts the window in); the series' bin k holds the entries of window time (10k, 10k + 10] ms,
summed over jobs and directions (IOPS: each entry spread over the bins its 10 ms overlap) or weighted by them
(latency). Resolution: 10 ms, and as late as fio's helper
thread (on a busy machine a few tens of ms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .parse import error_words

#: fio's averaging period for a faulted cell's logs, and the timeline's bin.
STEP_MS = 10


def log_options(prefix: str) -> dict[str, str]:
    """The job file's options for the fine timeline: logs under ``prefix`` (an absolute path in the run directory),
    and I/O errors counted, not fatal."""
    return {"write_iops_log": prefix, "write_lat_log": prefix, "log_avg_msec": str(STEP_MS),
            "continue_on_error": "all"}


def parse_log(text: str) -> list[tuple[int, float, int]]:
    """fio's log lines → (time ms, value, direction 0 read / 1 write / 2 trim); lines fio did not finish are
    skipped (fio is stopped at the window's end, mid-line perhaps)."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3:
            continue
        try:
            out.append((int(parts[0]), float(parts[1]), int(parts[2])))
        except ValueError:
            continue
    return out


@dataclass
class Timeline:
    """One window's fine timeline: per 10 ms bin, IOPS summed over jobs (0: no completion) and the mean completion
    latency (µs, None without a completion)."""

    step_ms: int
    iops: list[float]
    lat_us: list[float | None]
    jobs: int
    entries: int = 0
    notes: list[str] = field(default_factory=list)


def merge(jobs: list[tuple[list[tuple[int, float, int]], list[tuple[int, float, int]]]], t0_ms: float,
          window_ms: float, step_ms: int = STEP_MS) -> Timeline:
    """Each job's (IOPS entries, latency entries) merged into bins of ``step_ms`` over the window that starts at
    job time ``t0_ms`` and lasts ``window_ms``."""
    n = max(1, int(round(window_ms / step_ms)))
    iops = [0.0] * n
    lat_w = [0.0] * n
    lat_sum = [0.0] * n
    entries = 0

    def index(t: int) -> int | None:
        w = t - t0_ms
        k = -(-w // step_ms) - 1  # (10k, 10k + 10] → k
        return int(k) if 0 <= k < n else None

    for iops_log, lat_log in jobs:
        rate: dict[tuple[int, int], float] = {}
        for t, v, d in iops_log:
            rate[(t, d)] = v
            if v <= 0:
                continue
            entries += 1
            # the entry's period is the step before it: spread it over the bins it overlaps (fio's helper wakes a
            # ms early or late, so entries 9 or 11 ms apart would otherwise leave a bin empty that was not)
            end = t - t0_ms
            for k in (int(end // step_ms) - 1, int(end // step_ms)):
                overlap = min(end, (k + 1) * step_ms) - max(end - step_ms, k * step_ms)
                if 0 <= k < n and overlap > 0:
                    iops[k] += v * overlap / step_ms
        for t, v, d in lat_log:
            k = index(t)
            if k is None:
                continue
            weight = rate.get((t, d), 1.0) or 1.0
            lat_w[k] += weight
            lat_sum[k] += weight * v / 1000.0
    lat = [s / w if w else None for s, w in zip(lat_sum, lat_w)]
    return Timeline(step_ms, [round(v, 1) for v in iops], [None if v is None else round(v, 1) for v in lat],
                    len(jobs), entries)


_JOB_LOG = re.compile(r"^(?P<kind>[a-z_]+)\.(?P<job>[0-9]+)\.log(?:\.(?P<server>.+))?$")


def job_logs(prefix: Path, kind: str) -> list[Path]:
    """Every job's log of ``kind`` ('iops', 'clat', 'clat_hist') under ``prefix``, by server and job number: a
    direct run's ``PREFIX_iops.N.log``, a client run's ``PREFIX_iops.N.log.<server>`` (each server numbers its own
    jobs from 1; protolab's agents are named by their socket's file, engine.agents). Links are not followed."""
    found = []
    for p in prefix.parent.glob(f"{prefix.name}_{kind}.*"):
        m = _JOB_LOG.match(p.name[len(prefix.name) + 1:])
        if m and m["kind"] == kind and p.is_file() and not p.is_symlink():
            found.append(((m["server"] or ""), int(m["job"]), p))
    return [p for _, _, p in sorted(found)]


def read_logs(prefix: Path) -> list[tuple[list[tuple[int, float, int]], list[tuple[int, float, int]]]]:
    """Every job's (IOPS, completion latency) log written under ``prefix``, in job order: fio's own files, or the
    ones a fio client wrote for its server (a guest's fio: the server sends each log, and the client names it
    ``PREFIX_iops.N.log.HOSTNAME``, client.c ``fio_client_handle_iolog``; one server per faulted window)."""
    out = []
    for iops in job_logs(prefix, "iops"):
        clat = iops.with_name(f"{prefix.name}_clat." + iops.name[len(prefix.name) + len("_iops."):])
        out.append((parse_log(iops.read_text(errors="replace")),
                    parse_log(clat.read_text(errors="replace")) if clat.is_file() and not clat.is_symlink() else []))
    return out



def remove_logs(prefix: Path) -> None:
    """Remove fio's logs under ``prefix`` once merged (the timeline and heatmap files keep what they said)."""
    for p in prefix.parent.glob(f"{prefix.name}_*.log*"):
        if p.is_file() and not p.is_symlink():
            p.unlink()


def io_errors(docs: list[dict[str, Any]], ended: bool = False) -> tuple[int, str | None]:
    """(I/O errors fio counted, the first one in words) from the run's last status document that has jobs (a
    client run's final document may hold only "All clients"; a faulted window has one fio): each job's
    ``total_err`` and ``first_error`` (cumulative; with continue_on_error fio counts them and goes on). ``ended``:
    fio gave up (its run ended by an error), and each job's ``error`` that ended it counts too — fio's total_err
    holds only the errors it went on after (backend.c counts an error only when it continues), so a job that
    gave up on its first failed I/O reports total_err 0 and that error in ``error``."""
    def jobs_of(d: dict[str, Any]) -> list[dict[str, Any]]:
        return d.get("jobs") or [j for j in d.get("client_stats", []) if j.get("jobname") != "All clients"]

    jobs = next((jobs_of(d) for d in reversed(docs) if jobs_of(d)), [])
    total = sum(int(j.get("total_err", 0) or 0) for j in jobs)
    first = next((int(j["first_error"]) for j in jobs if int(j.get("first_error", 0) or 0)), None)
    if ended:
        fatal = [int(j.get("error", 0) or 0) for j in jobs if int(j.get("error", 0) or 0)]
        total += len(fatal)
        first = first if first is not None else next(iter(fatal), None)
    words = None if first is None else error_words(first)
    return total, words

