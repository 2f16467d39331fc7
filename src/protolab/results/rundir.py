"""The run directory results/<run-id>/: manifest, fio's raw outputs, cell records, cells.csv.

Every write is atomic (temporary file + rename), so a crash or Ctrl-C never
leaves a half-written file, and what was measured before stays readable.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import ProtolabError
from ..safepath import inside
from .records import CellRecord

MANIFEST_SCHEMA = 1

#: cells.csv, one row per cell and repeat (documented in the README).
CSV_COLUMNS = [
    "run_id", "workload", "configuration", "baseline", "load_index", "hosts", "streams_per_host",
    "oio_per_stream", "total_oio", "repeat", "iops", "read_iops", "write_iops", "mbps", "read_mbps",
    "write_mbps", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p95_us", "lat_p99_us", "lat_p99.9_us",
    "read_lat_mean_us", "read_lat_p99_us", "write_lat_mean_us", "write_lat_p99_us", "jobs", "runtime_s",
    "errors", "started", "ended",
]


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def provenance(fio_version: str, fio_engines: list[str], fio_path: str) -> dict[str, Any]:
    """Where and with what a run was measured."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "protolab": __version__,
        "fio_version": fio_version,
        "fio_engines": fio_engines,
        "fio_path": fio_path,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "hostname": platform.node(),
        "cpu_model": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def cell_row(rec: CellRecord) -> dict[str, Any]:
    """A cells.csv row from a record."""
    r = rec.result
    pct = r.percentiles_us
    return {
        "run_id": rec.run_id, "workload": rec.workload, "configuration": rec.configuration,
        "baseline": int(rec.baseline), "load_index": rec.load_index, "hosts": rec.hosts,
        "streams_per_host": rec.streams_per_host, "oio_per_stream": rec.oio_per_stream,
        "total_oio": rec.total_oio, "repeat": rec.repeat, "iops": r.iops, "read_iops": r.read.iops,
        "write_iops": r.write.iops, "mbps": r.mbps, "read_mbps": r.read.mbps, "write_mbps": r.write.mbps,
        "lat_mean_us": r.lat_mean_us, "lat_p50_us": pct.get("p50"), "lat_p90_us": pct.get("p90"),
        "lat_p95_us": pct.get("p95"), "lat_p99_us": pct.get("p99"), "lat_p99.9_us": pct.get("p99.9"),
        "read_lat_mean_us": r.read.lat_mean_us, "read_lat_p99_us": r.read.percentiles_us.get("p99"),
        "write_lat_mean_us": r.write.lat_mean_us, "write_lat_p99_us": r.write.percentiles_us.get("p99"),
        "jobs": r.jobs, "runtime_s": r.runtime_s, "errors": r.errors, "started": rec.started, "ended": rec.ended,
    }


def cell_summary(rec: CellRecord) -> dict[str, Any]:
    """The manifest's line for one measured cell."""
    return {
        "cell_id": rec.cell_id, "workload": rec.workload, "configuration": rec.configuration,
        "load": f"{rec.hosts}×{rec.streams_per_host}×{rec.oio_per_stream}", "repeat": rec.repeat,
        "iops": round(rec.result.iops, 1), "mbps": round(rec.result.mbps, 3), "errors": rec.result.errors,
        "record": f"records/{rec.cell_id}.json",
    }


@dataclass
class RunDir:
    """A run directory being written (or read back)."""

    path: Path

    @property
    def run_id(self) -> str:
        """The directory's name."""
        return self.path.name

    @classmethod
    def create(cls, root: Path, plan_name: str, manifest: dict[str, Any]) -> "RunDir":
        """A new results/<run-id>/ with its manifest; run-id = UTC time + plan name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "-", plan_name)
        # absolute: fio runs with other working directories (a fio server's, a namespace's), and every
        # path it is given must still point here
        root = Path(root).absolute()
        path = root / f"{stamp}-{safe}"
        n = 1
        while path.exists():
            n += 1
            path = Path(root) / f"{stamp}-{safe}-{n}"
        try:
            path.mkdir(parents=True)
        except OSError as e:
            raise ProtolabError(f"results directory {root}: cannot create {path.name} ({e.strerror}); "
                                "choose another with --results") from None
        rd = cls(path)
        rd.write_manifest({"schema_version": MANIFEST_SCHEMA, "run_id": rd.run_id, **manifest})
        return rd

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        """An existing run directory; ProtolabError if it is not one."""
        p = Path(path).absolute()
        if not (p / "manifest.json").is_file():
            raise ProtolabError(f"{p}: not a protolab run directory (no manifest.json); give results/<run-id>")
        rd = cls(p)
        version = rd.manifest().get("schema_version")
        if version != MANIFEST_SCHEMA:
            raise ProtolabError(f"{p}/manifest.json: schema version {version} is not one this protolab reads "
                                f"({MANIFEST_SCHEMA}); use the protolab version that wrote it")
        return rd

    def manifest(self) -> dict[str, Any]:
        """The manifest as stored."""
        return json.loads((self.path / "manifest.json").read_text())

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Replace the manifest atomically."""
        write_json(self.path / "manifest.json", manifest)

    def update_manifest(self, **fields: Any) -> None:
        """Set top-level fields of the manifest."""
        m = self.manifest()
        m.update(fields)
        self.write_manifest(m)

    def raw_path(self, cell_id: str) -> Path:
        """Where fio's json+ output of a cell goes."""
        p = inside(self.path, "raw", f"{cell_id}.json")
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def job_path(self, cell_id: str) -> Path:
        """Where the fio job file of a cell goes."""
        p = inside(self.path, "jobs", f"{cell_id}.fio")
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def add_record(self, rec: CellRecord) -> None:
        """Store one cell record, rewrite cells.csv to include it, and list it in the manifest."""
        write_json(inside(self.path, "records", f"{rec.cell_id}.json"), rec.model_dump(mode="json"))
        records = self.records()
        self.write_csv(records)
        self.update_manifest(cells_done=len(records), cells=[cell_summary(r) for r in records])

    def records(self) -> list[CellRecord]:
        """Every stored record, in the order they were measured."""
        folder = self.path / "records"
        if not folder.is_dir():
            return []
        recs = [CellRecord.model_validate_json(p.read_text()) for p in folder.glob("*.json")]
        return sorted(recs, key=lambda r: r.seq)

    def write_csv(self, records: list[CellRecord]) -> None:
        """cells.csv: one tidy row per cell and repeat."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for rec in records:
            w.writerow({k: ("" if v is None else v) for k, v in cell_row(rec).items()})
        atomic_write(self.path / "cells.csv", buf.getvalue())
