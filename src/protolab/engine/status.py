"""fio's status documents (``--status-interval``) → cumulative snapshots → a measured window.

With ``--status-interval=1 --output-format=json+`` fio prints, every second, a full
JSON document of every job's counters *so far* (I/Os, bytes, runtime, the clat
histogram bins, CPU). A direct run writes each document to its output file as it
goes, the last one when the jobs end. A client run (``fio --client``) receives the
servers' documents as they come but prints them only at the end, as one document
whose ``client_stats`` list every job's every snapshot in the order they arrived;
with protolab's fio patch 0004 (FIO_CLIENT_STREAM) it prints each server's status
as a document of its own the moment it comes.

A measured window inside one run is the difference of two snapshots: everything
counts (I/Os, bytes, runtime, histogram bins, CPU) are subtracted job by job, and
the result is written in fio's own shape so that ``parse.parse_fio_json`` reads it
like any fio output. Pure functions, tested on captured real output.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

DIRECTIONS = ("read", "write", "trim")
#: A boundary snapshot is the one nearest its target: half a status interval (of 1 s) either side.
TOLERANCE_MS = 500.0


def documents(text: str) -> list[dict[str, Any]]:
    """Every JSON document in fio's output text, in order (lines before a document are skipped)."""
    return _documents(text)[0]


def _documents(text: str) -> tuple[list[dict[str, Any]], bool]:
    """``documents(text)``, and whether the text held no document cut short or malformed."""
    out, decoder, i = [], json.JSONDecoder(), 0
    while True:
        start = text.find("{", i)
        if start < 0:
            return out, True
        if start and text[start - 1] != "\n":  # only a '{' that opens a line opens a document
            i = start + 1
            continue
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            return out, False  # the last document is still being written
        out.append(doc)
        i = end


class DocumentReader:
    """Splits output that grows while fio runs into whole documents (each ends with a '}' line)."""

    def __init__(self) -> None:
        self._buf = ""
        self.whole = True  # every document so far was whole (a malformed one ends what documents() reads)

    def feed(self, chunk: str) -> list[dict[str, Any]]:
        """Add newly written text; returns the documents it completed."""
        self._buf += chunk
        cut = self._buf.rfind("\n}\n")
        if cut < 0:
            return []
        whole, self._buf = self._buf[:cut + 3], self._buf[cut + 3:]
        docs, ok = _documents(whole)
        self.whole = self.whole and ok
        return docs

    def rest(self) -> list[dict[str, Any]]:
        """The documents of the text fed after the last whole one (fio has exited: nothing more comes)."""
        text, self._buf = self._buf, ""
        return documents(text)


class StatusFile:
    """fio's output file read as fio writes it: ``poll`` gives each new whole document once, in order.

    With ``keep``, every document is also kept, so that a client run's statuses are parsed once: ``finish()``,
    after fio has exited, reads what is left and returns every document of the file, the same list as
    ``documents(path.read_text())`` (read afresh when a document was malformed, where that stops)."""

    def __init__(self, path: Path, keep: bool = False):
        self.path, self.keep, self.pos = Path(path), keep, 0
        self._reader = DocumentReader()
        self._decode = codecs.getincrementaldecoder("utf-8")()
        self.kept: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        """The documents completed since the last poll."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.pos += len(chunk)
        docs = self._reader.feed(self._decode.decode(chunk))
        if self.keep:
            self.kept += docs
        return docs

    def finish(self) -> list[dict[str, Any]]:
        """Every document of the file, once fio has exited."""
        self.poll()
        rest = self._reader.rest()
        if not self.keep or not self._reader.whole or self._decode.getstate()[0]:  # or a character cut short
            return documents(self.path.read_text())
        return self.kept + rest


def source_of(job: dict[str, Any]) -> str:
    """Which fio ran a job: 'HOST:PORT' for a client run's server, 'local' for a direct run."""
    return str(job.get("hostname", "local")) + (f":{job['port']}" if "port" in job else "")


@dataclass(frozen=True)
class Snapshot:
    """Every job of one fio (a direct run, or one server of a client run) at one instant, cumulative."""

    source: str
    jobs: tuple[dict[str, Any], ...]

    @property
    def runtime_ms(self) -> float:
        """How long the jobs have done I/O (the longest job), ms; 0 before any has started.

        Not 'job_runtime': a status sent while a job is still being set up (connecting, logging in)
        gives it the time since an epoch not set yet (millions of ms), then it starts again from 0.
        """
        return max(self.job_runtimes_ms, default=0.0)

    @property
    def job_runtimes_ms(self) -> list[float]:
        """Each job's I/O time so far, ms (0: still being set up)."""
        return [max(float(j.get(d, {}).get("runtime", 0) or 0) for d in DIRECTIONS) for j in self.jobs]

    @property
    def ios(self) -> int:
        """I/Os completed so far, every job and direction."""
        return sum(int(j.get(d, {}).get("total_ios", 0)) for j in self.jobs for d in DIRECTIONS)


def snapshots(docs: Iterable[dict[str, Any]]) -> dict[str, list[Snapshot]]:
    """Per fio (source), its snapshots in time order, from a direct run's documents or a client run's (one, or
    one per server and status when streamed)."""
    out: dict[str, list[Snapshot]] = {}
    for doc in docs:
        if "client_stats" not in doc:
            jobs = tuple(doc.get("jobs", []))
            if jobs:
                out.setdefault("local", []).append(Snapshot("local", jobs))
            continue
        # a client run: the k-th entry of a (server, job) is that job in the server's k-th snapshot
        seen: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for j in doc["client_stats"]:
            if j.get("jobname") == "All clients":
                continue
            seen.setdefault(source_of(j), {}).setdefault(str(j.get("jobname")), []).append(j)
        for src, by_job in seen.items():  # a streamed run (fio patch 0004): a document per server and status
            n = min(len(v) for v in by_job.values())
            mine = out.setdefault(src, [])
            if mine and len(by_job) < len(mine[0].jobs):
                continue  # a status cut short (its server's connection dropped): not every job's
            mine.extend(Snapshot(src, tuple(v[k] for v in by_job.values())) for k in range(n))
    for src, snaps in out.items():  # a client run may list a server's last status twice
        out[src] = [s for i, s in enumerate(snaps) if not i or not s.runtime_ms
                    or (s.runtime_ms, s.ios) != (snaps[i - 1].runtime_ms, snaps[i - 1].ios)]
    return out


def iops_series(snaps: list[Snapshot]) -> list[float]:
    """I/Os per second of each interval between consecutive snapshots (the first from the jobs' start)."""
    out: list[float] = []
    ios, ms = 0, 0.0
    for s in snaps:
        dt = (s.runtime_ms - ms) / 1000.0
        out.append((s.ios - ios) / dt if dt > 0 else 0.0)  # one value per snapshot: 0 before the jobs start
        ios, ms = s.ios, max(ms, s.runtime_ms)
    return out


def total_series(per_source: dict[str, list[float]]) -> list[float]:
    """The sum over sources, interval by interval (a source that has ended adds nothing).

    Every fio server's status timer starts when it gets its jobs, so the k-th status of each
    comes at about the same time, whenever its jobs started."""
    n = max((len(v) for v in per_source.values()), default=0)
    return [sum(v[i] for v in per_source.values() if i < len(v)) for i in range(n)]


def elapsed_ms(per: dict[str, list[Snapshot]], i: int) -> float:
    """The shortest I/O time of any job at the i-th status: the time a warm-up and a window are counted in,
    so that every job has warmed up as long as the warm-up asks (jobs may start seconds apart: each
    connects and logs in first)."""
    if i < 0:
        return 0.0
    return min((t for v in per.values() if v for t in v[min(i, len(v) - 1)].job_runtimes_ms), default=0.0)


def nearest(snaps: list[Snapshot], runtime_ms: float) -> int:
    """The index of the snapshot taken nearest to ``runtime_ms`` of the jobs' runtime."""
    return min(range(len(snaps)), key=lambda i: abs(snaps[i].runtime_ms - runtime_ms))


def _num(d: dict[str, Any], key: str) -> float:
    return float(d.get(key, 0) or 0)


def int_bins(bins: dict[Any, Any]) -> dict[int, int]:
    """fio's histogram bins ('bin value': count) with integer keys and counts, in their order."""
    return dict(zip(map(int, bins), map(int, bins.values())))


def _diff_clat(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    n = int(_num(b, "N")) - int(_num(a, "N"))
    total = _num(b, "mean") * _num(b, "N") - _num(a, "mean") * _num(a, "N")
    # thousands of bins per job and status (a window's intervals diff every job's): map(int), not a call a bin
    get = int_bins(a.get("bins", {})).get
    end = b.get("bins", {})
    bins = {str(k): c for k, v in zip(map(int, end), map(int, end.values())) if (c := v - get(k, 0)) > 0}
    return {"N": n, "mean": max(0.0, total / n) if n > 0 else 0.0, "bins": bins}


def _diff_direction(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    ios = int(_num(b, "total_ios")) - int(_num(a, "total_ios"))
    nbytes = int(_num(b, "io_bytes")) - int(_num(a, "io_bytes"))
    runtime = _num(b, "runtime") - _num(a, "runtime")
    return {"total_ios": ios, "io_bytes": nbytes, "runtime": runtime,
            "iops": ios / runtime * 1000.0 if runtime > 0 else 0.0,
            "bw_bytes": nbytes / runtime * 1000.0 if runtime > 0 else 0.0,
            "clat_ns": _diff_clat(a.get("clat_ns", {}), b.get("clat_ns", {}))}


def diff_job(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """One job between two of its snapshots (``a`` None: from its start), in fio's per-job shape."""
    a = a or {}
    runtime = _num(b, "job_runtime") - _num(a, "job_runtime")
    # fio gives CPU as % of the job's runtime so far: turn both into seconds, subtract, back to %
    cpu = {k: (_num(b, k) * _num(b, "job_runtime") - _num(a, k) * _num(a, "job_runtime")) / runtime
           if runtime > 0 else 0.0 for k in ("usr_cpu", "sys_cpu")}
    out = {k: b[k] for k in ("jobname", "groupid", "hostname", "port") if k in b}
    out |= {"error": b.get("error", 0), "job_runtime": runtime, **cpu}
    if "total_err" in b:  # fio gives it with continue_on_error (a verified window's failed checks: engine.readback)
        out["total_err"] = int(_num(b, "total_err")) - int(_num(a, "total_err"))
    for d in DIRECTIONS:
        if d in b:
            out[d] = _diff_direction(a.get(d, {}), b[d])
            if out.get("total_err", 0) > 0:
                _answered_only(out[d])
    return out


def _answered_only(direction: dict[str, Any]) -> None:
    """A window in which fio went on after failed I/Os: its I/Os are those that completed with data. fio's
    ``total_ios`` counts each I/O it queued, a failed one too (ioengines.c, td_io_queue), while its latency samples
    (``clat_ns`` N) and ``io_bytes`` count only I/Os without an error (io_u.c, io_completed): an initiator that fails
    I/O back while its path is down would otherwise add thousands of failed I/Os a second to the IOPS."""
    n = int(_num(direction.get("clat_ns", {}), "N"))
    if "N" in direction.get("clat_ns", {}) and n < direction["total_ios"]:
        runtime = direction["runtime"]
        direction["total_ios"] = n
        direction["iops"] = n / runtime * 1000.0 if runtime > 0 else 0.0


def window_jobs(start: Snapshot | None, end: Snapshot) -> list[dict[str, Any]]:
    """Every job of one fio between two snapshots (``start`` None: from the jobs' start)."""
    # a job still being set up at the start (no I/O yet) is counted from its start
    before = {str(j.get("jobname")): j for j in (start.jobs if start else ())
              if any(float(j.get(d, {}).get("runtime", 0) or 0) for d in DIRECTIONS)}
    return [diff_job(before.get(str(j.get("jobname"))), j) for j in end.jobs]


def window_document(pairs: list[tuple[Snapshot | None, Snapshot]], *, client: bool, version: str = "") -> dict:
    """The measured window as one fio-shaped document: 'jobs' (direct) or 'client_stats' (client run)."""
    jobs = [j for start, end in pairs for j in window_jobs(start, end)]
    return {"fio version": version, "protolab": "window: status snapshots subtracted",
            "client_stats" if client else "jobs": jobs}
