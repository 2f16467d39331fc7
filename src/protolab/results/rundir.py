"""The run directory results/<run-id>/ (schema 2): manifest, records, series, cells.csv, fio's raw outputs.

- ``manifest.json``: small and of constant size — schema version, plan (text and model), provenance,
  sessions (start, end, how each ended), status, phase, counts. Replaced atomically.
- ``records.jsonl``: one CellRecord per line, appended as each window ends. A cell measured again (a
  failed cell, on resume) appends a new line; the newest line of a cell is the one that counts.
- ``series.csv``: per-interval rows (see SeriesRow), appended while the run goes.
- ``cells.csv``: one row per record, appended; `protolab report` rewrites it from the records.
- ``raw/``, ``jobs/``: fio's job files and json+ outputs, kept.

Appending costs the same at record 10,000 as at record 1: nothing is re-read or rewritten.
A schema-1 directory (records/*.json, series inside records) is read through `migrate`.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..errors import ProtolabError
from ..metrics import FIGURES, METRICS
from ..safepath import inside
from ..trust import UnsafePath, make_dir
from .files import StoreError, append_lines, atomic_write, now, write_json  # noqa: F401 (re-exported)
from .manifest import MANIFEST_SCHEMA, READABLE_SCHEMAS, Events, Manifest, RunStart  # noqa: F401 (re-exported)
from .records import SERIES_COLUMNS, CellRecord, SeriesRow
from .seriesfile import Point, lines_of, number
from .trusted import check_tree, one_line_error

#: cells.csv, one row per record (documented in docs/rundir.md); then one column per extra dimension.
_CSV_HEAD = [
    "run_id", "seq", "session", "status", "workload", "configuration", "protocol", "controller", "device_model",
    "baseline",
    "load_index", "hosts",
    "streams_per_host", "oio_per_stream", "total_oio", "repeat", "iops", "read_iops", "write_iops", "mbps",
    "read_mbps", "write_mbps", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p95_us", "lat_p99_us",
    "lat_p99.9_us", "read_lat_mean_us", "read_lat_p99_us", "write_lat_mean_us", "write_lat_p99_us",
]
_CSV_TAIL = ["warmup_s", "steady", "jobs", "runtime_s", "errors", "started", "ended"]
#: cells.csv's columns of a verified run (method.verify; results.records.Verified): MiB read back and checked
#: after the window, chunks that failed a check, the lowest bad offset in bytes ('' when none).
VERIFY_COLUMNS = ["verified_mib", "mismatches", "first_bad_offset"]
#: A run with faults (plan.faults) adds its figures of each window (analysis.fault_figures, written by the report):
#: the longest stall (no completion), the longest span with no I/O answered (no completion, no error), the I/O errors
#: fio counted and went on, IOPS while the fault lasted, the time back to steady.
FAULT_COLUMNS = ["stall_ms", "unanswered_ms", "io_errors", "degraded_iops", "recovery_s"]
#: The device model's mean queue and service time per request in the window (results.records.DeviceTime; empty
#: without a device model).
DEVICE_COLUMNS = ["device_queue_us", "device_service_us"]
#: A plan with method.breakdown adds each window's latency breakdown (analysis.time_breakdown, written by the
#: report): the components measured on their own (µs per I/O), every part by name (a folded one under both
#: names), the residual.
BREAKDOWN_COLUMNS = ["time_initiator_us", "time_network_us", "time_server_us", "time_device_us", "time_parts",
                     "time_residual_pct"]


def csv_columns() -> list[str]:
    """cells.csv's columns: the cell's place (the configuration's protocol and, for VMs, virtual disk controller,
    written by the report from the plan), the fio result's, every registered metric (protolab.metrics) not among
    them, the derived figures cells.csv carries, the device model's time, then the window's own."""
    metrics = [k for k in METRICS if k not in _CSV_HEAD]
    return [*_CSV_HEAD, *metrics, *(k for k, in_csv in FIGURES.items() if in_csv), *DEVICE_COLUMNS, *_CSV_TAIL]


RowFigures = Callable[[CellRecord], dict[str, Any]]


def cell_row(rec: CellRecord, figures: dict[str, Any] | None = None,
             columns: set[str] | None = None) -> dict[str, Any]:
    """A cells.csv row from a record; ``figures`` adds the derived per-I/O columns (``columns``: `csv_columns()`'s,
    given when writing many rows)."""
    r = rec.result
    pct = r.percentiles_us
    row = {
        "run_id": rec.run_id, "seq": rec.seq, "session": rec.session, "status": rec.status,
        "workload": rec.workload, "configuration": rec.configuration, "baseline": int(rec.baseline),
        "load_index": rec.load_index, "hosts": rec.hosts, "streams_per_host": rec.streams_per_host,
        "oio_per_stream": rec.oio_per_stream, "total_oio": rec.total_oio, "repeat": rec.repeat, "iops": r.iops,
        "read_iops": r.read.iops, "write_iops": r.write.iops, "mbps": r.mbps, "read_mbps": r.read.mbps,
        "write_mbps": r.write.mbps, "lat_mean_us": r.lat_mean_us, "lat_p50_us": pct.get("p50"),
        "lat_p90_us": pct.get("p90"), "lat_p95_us": pct.get("p95"), "lat_p99_us": pct.get("p99"),
        "lat_p99.9_us": pct.get("p99.9"), "read_lat_mean_us": r.read.lat_mean_us,
        "read_lat_p99_us": r.read.percentiles_us.get("p99"), "write_lat_mean_us": r.write.lat_mean_us,
        "write_lat_p99_us": r.write.percentiles_us.get("p99"), "warmup_s": rec.warmup.seconds,
        "steady": "" if rec.steady is None else int(rec.steady.steady), "jobs": r.jobs, "runtime_s": r.runtime_s,
        "errors": r.errors, "started": rec.started, "ended": rec.ended,
    }
    columns = columns if columns is not None else set(csv_columns())
    for k, v in (figures or {}).items():
        if k in columns:
            row[k] = int(v) if isinstance(v, bool) else v
    for k in columns.difference(row):  # a registered metric read from the result (protolab.metrics)
        m = METRICS.get(k)
        if m is not None and m.source == "result":
            row[k] = getattr(r, m.field)
        elif m is not None and m.source == "percentile":
            row[k] = pct.get(m.field)
    v = rec.verification
    if v is not None:
        row |= {"verified_mib": round(v.verified_bytes / 2**20, 3), "mismatches": v.mismatches,
                "first_bad_offset": v.first_bad_offset}
    if (d := rec.device_time) is not None:
        row |= {"device_queue_us": d.queue_us, "device_service_us": d.service_us}
    row.update(rec.dimensions)
    return row


def _csv_text(rows: Iterable[dict[str, Any]], columns: list[str], header: bool) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")  # rows as lists: DictWriter's per-field checks were most of the cost
    if header:
        w.writerow(columns)
    w.writerows(["" if (v := row.get(k)) is None else v for k in columns] for row in rows)
    return buf.getvalue()


@dataclass
class RunDir:
    """A run directory being written (or read back)."""

    path: Path
    _manifest: Events | None = field(default=None, repr=False)
    _v1: Any = field(default=None, repr=False)  # a migrated schema-1 directory, read once
    report_data: Any = field(default=None, repr=False)  # the report's data once built (report.tables.ReportData)
    _lock: int | None = field(default=None, repr=False)  # the directory, flock'd while this process's session runs

    @property
    def run_id(self) -> str:
        """The directory's name."""
        return self.path.name

    @property
    def schema(self) -> int:
        """The schema version the directory was written with."""
        return self.manifest().schema

    @classmethod
    def create(cls, root: Path, plan_name: str, start: RunStart) -> "RunDir":
        """A new results/<run-id>/ with its manifest; run-id = UTC time + plan name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "-", plan_name)
        # absolute: fio runs with other working directories (a fio server's, a namespace's), and every
        # path it is given must still point here
        root = Path(root).absolute()
        # fio and the servers get paths in here: made (or found) and checked so that no other user can swap
        # them, even one who makes the results directory first in a shared /tmp (modes from the umask: 0750)
        try:
            make_dir(root, invoker=True)
        except UnsafePath as e:
            raise UnsafePath(f"results directory: {e} (--results)") from None
        path = root / f"{stamp}-{safe}"
        n = 1
        while os.path.lexists(path):
            n += 1
            path = root / f"{stamp}-{safe}-{n}"
        make_dir(path, exist_ok=False)
        rd = cls(path)
        rd.events.run_started(rd.run_id, start)
        atomic_write(path / "cells.csv", _csv_text([], rd.csv_columns, header=True))
        atomic_write(path / "series.csv", _csv_text([], SERIES_COLUMNS, header=True))
        return rd

    @classmethod
    def open(cls, path: Path, *, write: bool = True) -> "RunDir":
        """An existing run directory; ProtolabError if it is not one, its schema is unknown, its manifest is not
        what protolab writes, or (see ``check_tree``) it holds a symlink or, for ``write`` as root, another user
        could change it."""
        p = Path(path).absolute()
        if p.is_symlink() or not (p / "manifest.json").is_file():
            raise ProtolabError(f"{p}: not a protolab run directory (no manifest.json); give results/<run-id>")
        check_tree(p, write=write)
        rd = cls(p)
        try:
            version = rd.manifest().schema_version
        except (ValueError, OSError) as e:
            raise ProtolabError(f"{p}/manifest.json: unreadable ({one_line_error(e)}); the run directory is "
                                "damaged") from None
        if version not in READABLE_SCHEMAS:
            raise ProtolabError(f"{p}/manifest.json: schema version {version} is not one this protolab reads "
                                f"({', '.join(map(str, READABLE_SCHEMAS))}); use the protolab version that wrote it")
        return rd

    # -- one session at a time -------------------------------------------------------------------

    def hold(self) -> None:
        """This process's session of the run: an flock on the directory until `release` (or the process's end),
        refused in one line while another session of the run — a `run`, `resume` or `detach` still going — holds
        it. Where the file system has no locks (ENOLCK on some NFS mounts) the session goes on unguarded."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise ProtolabError(f"{self.path}: cannot open the run directory ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ProtolabError(f"{self.path}: another protolab session of this run is still going (a run, "
                                "resume or detach); let it end, or stop it, first") from None
        except OSError:
            os.close(fd)
            return
        self._lock = fd

    def release(self) -> None:
        """End `hold` (closing the descriptor drops the flock)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    @contextlib.contextmanager
    def held(self) -> Iterator[RunDir]:
        """`hold` for the ``with`` block."""
        self.hold()
        try:
            yield self
        finally:
            self.release()

    # -- manifest ----------------------------------------------------------------------------------

    @property
    def events(self) -> Events:
        """The manifest's events: the only way to change manifest.json (see results.manifest)."""
        if self._manifest is None:
            self._manifest = Events(self.path / "manifest.json")
        return self._manifest

    def manifest(self) -> Manifest:
        """The manifest, typed (read once and checked, then kept in step with every event); read-only."""
        return self.events.read()

    @property
    def csv_columns(self) -> list[str]:
        """cells.csv's columns: the fixed ones, what the verification found when the plan verifies (method.verify),
        the latency breakdown when it asks for one (method.breakdown), then the plan's extra dimensions."""
        man = self.manifest()
        columns = csv_columns()
        method = (man.plan or {}).get("method") or {}
        columns += VERIFY_COLUMNS if method.get("verify") else []
        columns += BREAKDOWN_COLUMNS if method.get("breakdown") else []
        return columns + [d for d in man.dimensions if d not in columns] + (FAULT_COLUMNS if "fault" in man.dimensions
                                                                           else [])

    # -- paths -------------------------------------------------------------------------------------

    def raw_path(self, cell_id: str) -> Path:
        """Where fio's json+ output of a cell goes."""
        p = inside(self.path, "raw", f"{cell_id}.json")
        make_dir(p.parent)
        return p

    def job_path(self, cell_id: str) -> Path:
        """Where the fio job file of a cell goes."""
        p = inside(self.path, "jobs", f"{cell_id}.fio")
        make_dir(p.parent)
        return p

    # -- records and series ------------------------------------------------------------------------

    def add_record(self, rec: CellRecord, figures: dict[str, Any] | None = None) -> None:
        """Append one record (and its cells.csv row); the manifest's count goes up by one."""
        append_lines(self.path / "records.jsonl", [rec.model_dump_json()])
        append_lines(self.path / "cells.csv", [_csv_text([cell_row(rec, figures)], self.csv_columns, False)])
        self.events.cell_measured(rec.seq)

    def add_records(self, records: list[CellRecord]) -> None:
        """Append many records at once: the same files as `add_record` one by one, with one write per file and
        one manifest update (imports and synthetic runs; a measuring run stores each record as it ends)."""
        if records:
            append_lines(self.path / "records.jsonl", [r.model_dump_json() for r in records])
            append_lines(self.path / "cells.csv",
                         [_csv_text([cell_row(r, None) for r in records], self.csv_columns, False)])
            self.events.cell_measured(records[-1].seq, count=len(records))

    def add_series(self, rows: list[SeriesRow]) -> None:
        """Append per-interval rows to series.csv."""
        if rows:
            append_lines(self.path / "series.csv",
                         [_csv_text([r.model_dump() for r in rows], SERIES_COLUMNS, header=False)])

    def all_records(self) -> list[CellRecord]:
        """Every stored record, superseded ones included, in the order they were measured."""
        if self.schema == 1:
            return self._migrated().records
        path = self.path / "records.jsonl"
        if not path.is_file():
            return []
        out = []
        damaged: int | None = None  # a bad line is fatal unless it is the last one (torn by a crash)
        with path.open("rb") as f:  # line by line: a long run's file is never held whole in memory
            for i, line in enumerate(f):
                if damaged is not None:
                    raise ProtolabError(f"{path}: line {damaged + 1} is not a record; the run directory is "
                                        "damaged") from None
                if not line.strip():
                    continue
                try:
                    out.append(CellRecord.model_validate_json(line))
                except ValueError:
                    damaged = i
        return sorted(out, key=lambda r: r.seq)

    def records(self) -> list[CellRecord]:
        """The record that counts for each cell (its newest), in the order they were measured."""
        latest: dict[str, CellRecord] = {}
        for r in self.all_records():
            latest[r.cell_id] = r
        return sorted(latest.values(), key=lambda r: r.seq)

    def series(self, phase: str = "measure", seqs: set[int] | None = None) -> dict[int, dict[str, list[float]]]:
        """Per-interval IOPS by record seq: {seq: {host or 'all': [values in time order]}} (only ``seqs``, if given)."""
        if self.schema == 1:
            rows = [r for r in self._migrated().series if r.phase == phase and (seqs is None or r.seq in seqs)]
        else:
            rows = []
            path = self.path / "series.csv"
            if path.is_file():
                with path.open(newline="") as f:
                    reader = csv.reader(f)
                    head = next(reader, [])
                    at = {k: head.index(k) for k in ("seq", "phase", "host", "t_s", "iops") if k in head}
                    if len(at) == 5:
                        i_seq, i_phase, i_host, i_t, i_iops = (at[k] for k in ("seq", "phase", "host", "t_s", "iops"))
                        if seqs is not None and i_seq == 0:  # a long run's file: parse only the lines of ``seqs``
                            reader = csv.reader(lines_of(f, seqs))
                        for row in reader:
                            try:
                                if row[i_phase] == phase and (seqs is None or int(row[i_seq]) in seqs):
                                    rows.append(Point(int(row[i_seq]), row[i_host], float(row[i_t]),
                                                       float(row[i_iops])))
                            except (IndexError, ValueError):
                                continue  # a torn last line
        out: dict[int, dict[str, list[tuple[float, float]]]] = {}
        for r in rows:
            out.setdefault(r.seq, {}).setdefault(r.host, []).append((r.t_s, r.iops))
        return {seq: {h: [v for _, v in sorted(pts)] for h, pts in hosts.items()} for seq, hosts in out.items()}

    def intervals(self, seqs: set[int] | None = None) -> dict[int, list[SeriesRow]]:
        """The measured windows' merged per-interval rows (host "all"), by seq, in time order — an interrupted
        window's too (a seq with no record). Rows written before these columns existed carry IOPS only."""
        out: dict[int, list[SeriesRow]] = {}
        path = self.path / "series.csv"
        if self.schema == 1 or not path.is_file():
            return out
        fields = set(SeriesRow.model_fields)
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                try:
                    if row.get("phase") != "measure" or row.get("host") != "all":
                        continue
                    seq = int(row["seq"])
                    if seqs is not None and seq not in seqs:
                        continue
                    vals = {k: v for k, v in row.items() if k in fields and v not in ("", None)}
                    out.setdefault(seq, []).append(SeriesRow.model_validate(
                        {k: number(k, v) for k, v in vals.items()}))
                except (KeyError, ValueError, TypeError):
                    continue  # a torn last line
        return {k: sorted(v, key=lambda r: r.t_s) for k, v in out.items()}

    def write_csv(self, records: list[CellRecord], figures: RowFigures | None = None) -> None:
        """Rewrite cells.csv from ``records`` (what `protolab report` does with today's formulas)."""
        columns = set(self.csv_columns)
        rows = (cell_row(r, figures(r) if figures else None, columns) for r in records)  # one at a time
        atomic_write(self.path / "cells.csv", _csv_text(rows, self.csv_columns, header=True))

    def _migrated(self):
        if self._v1 is None:
            from .v1_run import read_v1

            self._v1 = read_v1(self.path)
        return self._v1
