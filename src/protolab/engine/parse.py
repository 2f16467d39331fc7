"""fio json+ output → CellResult. A pure function, tested on captured real output in tests/data/."""

from __future__ import annotations

import errno
import json
import os
from typing import Any

from ..analysis.latency import merge_bins, percentiles
from ..errors import ToolError
from ..results.records import CellResult, DirectionResult

_NS_PER_US = 1000.0
#: fio's error for a failed verify check (EILSEQ), in its JSON's "error" when a job went on past it.
MISMATCH_ERROR = errno.EILSEQ


def load_json(text: str, *, source: str = "fio output") -> dict[str, Any]:
    """fio's JSON document from ``text`` (fio may print warnings before it)."""
    # Client/server runs print '<host> …' lines before the document: start at a line that opens it.
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    if start <= 0 and not text.startswith("{"):
        raise ToolError(f"{source}: no JSON found in fio's output; see the raw output file")
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except json.JSONDecodeError as e:
        raise ToolError(f"{source}: fio's JSON output is incomplete ({e.msg}); see the raw output file") from None


def error_words(code: object) -> str:
    """'error 5 (Input/output error)' for fio's error code; fio writes a negative one as unsigned (-1 as 4294967295,
    from an engine that failed as a whole: libnbd's "nothing to poll for in state DEAD"), which os.strerror
    cannot take."""
    try:
        n = int(code)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"error {code}"
    signed = n - 2**32 if 2**31 <= n < 2**32 else (n - 2**64 if 2**63 <= n < 2**64 else n)
    if signed == -1:  # an engine's -1 is its failure as a whole far more often than -EPERM (libnbd's DEAD handle)
        return "error -1 (the engine failed without an errno; or EPERM)"
    try:
        words = os.strerror(abs(signed)) if signed else "no error"
    except (ValueError, OverflowError):
        words = "unknown"
    return f"error {signed} ({words})"


def job_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-job entries of a local run ('jobs') or a client/server run ('client_stats', without 'All clients')."""
    if "client_stats" in doc:
        return [j for j in doc["client_stats"] if j.get("jobname") != "All clients"]
    return list(doc.get("jobs", []))


def _direction(jobs: list[dict[str, Any]], key: str) -> DirectionResult:
    parts = [j[key] for j in jobs if key in j]
    ios = sum(int(p.get("total_ios", 0)) for p in parts)
    if ios == 0:
        return DirectionResult()
    # As fio's group reporting does: all the jobs' I/Os over the longest job's time. Summing each
    # job's own rate would overstate a window whose jobs started a little apart.
    seconds = max(float(p.get("runtime", 0)) for p in parts) / 1000.0
    bins = merge_bins(p.get("clat_ns", {}).get("bins", {}) for p in parts)
    # Exact merged mean: each job's mean weighted by its sample count.
    n = sum(int(p["clat_ns"].get("N", 0)) for p in parts if "clat_ns" in p)
    mean = (
        sum(p["clat_ns"]["mean"] * int(p["clat_ns"].get("N", 0)) for p in parts if "clat_ns" in p) / n
        if n
        else None
    )
    pct = percentiles(bins)
    return DirectionResult(
        ios=ios,
        bytes=sum(int(p.get("io_bytes", 0)) for p in parts),
        iops=ios / seconds if seconds else 0.0,
        mbps=sum(int(p.get("io_bytes", 0)) for p in parts) / seconds / 1e6 if seconds else 0.0,
        lat_mean_us=None if mean is None else mean / _NS_PER_US,
        percentiles_us={k: (None if v is None else v / _NS_PER_US) for k, v in pct.items()},
        bins_ns=bins,
    )


def went_on_past_mismatches(job: dict[str, Any]) -> bool:
    """A job whose only error was a failed check: it went on (its JSON has total_err, which fio gives only with
    continue_on_error) and its error is EILSEQ. Not an I/O failure: the verification counts its mismatches."""
    return int(job.get("error", 0)) == MISMATCH_ERROR and "total_err" in job


def parse_fio_json(doc: dict[str, Any] | str) -> CellResult:
    """Sum every job of one fio run (local or client/server) into a CellResult.

    IOPS and MB/s are all the jobs' I/Os and bytes over the longest job's runtime, as
    fio's group reporting computes them (a host's figure: its jobs' I/Os over that same window);
    latency percentiles come from the jobs' clat histograms summed.
    """
    if isinstance(doc, str):
        doc = load_json(doc)
    jobs = job_entries(doc)
    if not jobs:
        raise ToolError("fio reported no jobs; see the raw output file")
    read, write = _direction(jobs, "read"), _direction(jobs, "write")
    both = merge_bins([read.bins_ns, write.bins_ns])
    ios = read.ios + write.ios
    mean = None
    if ios:
        mean = sum((d.lat_mean_us or 0.0) * d.ios for d in (read, write)) / ios
    # a job that went on past failed verify checks did not fail: the verification counts them (engine.readback)
    errors = [j for j in jobs if int(j.get("error", 0)) and not went_on_past_mismatches(j)]
    by_host: dict[str, list[dict[str, Any]]] = {}
    cpu: dict[str, float] = {}
    for j in jobs:
        host = host_key(j)
        by_host.setdefault(host, []).append(j)
        # fio reports each job's CPU as % of its runtime (ms)
        busy = (float(j.get("usr_cpu", 0.0)) + float(j.get("sys_cpu", 0.0))) / 100.0
        cpu[host] = cpu.get(host, 0.0) + busy * float(j.get("job_runtime", 0)) / 1000.0
    return CellResult(
        iops=read.iops + write.iops,
        mbps=read.mbps + write.mbps,
        read=read,
        write=write,
        lat_mean_us=mean,
        percentiles_us={k: (None if v is None else v / _NS_PER_US) for k, v in percentiles(both).items()},
        jobs=len(jobs),
        runtime_s=max(float(j.get("job_runtime", 0)) for j in jobs) / 1000.0,
        errors=len(errors),
        error_messages=[
            f"{j.get('jobname', '?')}: {error_words(j['error'])}" for j in errors
        ],
        per_host_iops={h: _host_iops(js, jobs) for h, js in by_host.items()},
        per_host_cpu_s=cpu,
        # a job is one thread (fio measures it with RUSAGE_THREAD): its share of a core
        job_cpu_share_max=max((float(j.get("usr_cpu", 0.0)) + float(j.get("sys_cpu", 0.0))) / 100.0 for j in jobs),
    )


def _host_iops(host_jobs: list[dict[str, Any]], all_jobs: list[dict[str, Any]]) -> float:
    """One host's I/Os over the cell's window (the longest runtime of any job), so hosts add up to the total."""
    total = 0.0
    for d in ("read", "write"):
        seconds = max(float(j.get(d, {}).get("runtime", 0)) for j in all_jobs) / 1000.0
        if seconds:
            total += sum(int(j.get(d, {}).get("total_ios", 0)) for j in host_jobs) / seconds
    return total


def host_key(job: dict[str, Any]) -> str:
    """Which fio server ran a job: 'HOST:PORT' in client/server output, 'local' otherwise."""
    return str(job.get("hostname", "local")) + (f":{job['port']}" if "port" in job else "")
