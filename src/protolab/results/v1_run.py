"""Reading a schema-1 run directory as schema 2, in memory (the directory itself is not rewritten).

Schema 1 kept one JSON file per record under records/, with telemetry, derived
figures, steady-state verdicts and the per-second series in an untyped
``result.extra``. Here each becomes its typed schema-2 field; the derived figures
are dropped (they are recomputed from the counters), and the series become rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProtolabError
from .records import CellRecord, SeriesRow, Steadiness, Telemetry, Warmup


@dataclass
class V1Run:
    """A schema-1 run directory's records and series, as schema 2."""

    records: list[CellRecord] = field(default_factory=list)
    series: list[SeriesRow] = field(default_factory=list)


def _steadiness(d: Any) -> Steadiness | None:
    if not isinstance(d, dict) or "steady" not in d:
        return None
    try:
        return Steadiness(**{k: d[k] for k in Steadiness.model_fields})
    except (KeyError, ValueError):
        return None


def _warmup(d: Any) -> Warmup:
    if not isinstance(d, dict) or d.get("mode") in (None, "none"):
        return Warmup()
    until = d.get("mode") == "until-steady"
    return Warmup(mode=d["mode"], seconds=float(d.get("warmup_s") or 0.0),
                  ended_by=d.get("ended_by") if until else "time", verdict=_steadiness(d.get("verdict")))


def _telemetry(extra: dict[str, Any]) -> Telemetry | None:
    t = extra.get("telemetry")
    if not isinstance(t, dict) or "elapsed_s" not in t:
        return None
    # schema 1 did not store which ports were the storage side; its derived figures named them
    ports = list((extra.get("bytes_by_port") or {}).keys())
    return Telemetry(
        elapsed_s=t["elapsed_s"], machine_busy_s=t.get("machine_busy_s"), machine_total_s=t.get("machine_total_s"),
        servers_cpu_s=t.get("servers_cpu_s") or {}, roles_cpu_s=t.get("roles_cpu_s") or {},
        interfaces=t.get("interfaces") or {}, offloads=t.get("offloads") or {}, storage_ports=ports)


def record_v1(d: dict[str, Any]) -> tuple[CellRecord, list[SeriesRow]]:
    """One schema-1 record as a schema-2 record and its series rows."""
    result = dict(d["result"])
    extra = result.pop("extra", {}) or {}
    steady = extra.get("steady") if isinstance(extra.get("steady"), dict) else {}
    rec = CellRecord(
        run_id=d["run_id"], seq=d["seq"], session=1, cell_id=d["cell_id"],
        coords={"workload": d["workload"], "configuration": d["configuration"], "load": d["load_index"],
                "repeat": d["repeat"]},
        baseline=d["baseline"], hosts=d["hosts"], streams_per_host=d["streams_per_host"],
        oio_per_stream=d["oio_per_stream"], total_oio=d["total_oio"], started=d["started"], ended=d["ended"],
        result=result, telemetry=_telemetry(extra), warmup=_warmup(steady.get("warmup")),
        steady=_steadiness(steady.get("measured_window")), host_names=list(extra.get("hosts") or []),
        raw_output=d["raw_output"], job_file=d["job_file"],
    )
    rows = [SeriesRow(seq=rec.seq, cell_id=rec.cell_id, phase="measure", host="all", t_s=i + 1.0, iops=v)
            for i, v in enumerate(extra.get("iops_series") or [])]
    for host, values in (extra.get("iops_series_by_host") or {}).items():
        rows += [SeriesRow(seq=rec.seq, cell_id=rec.cell_id, phase="measure", host=host, t_s=i + 1.0, iops=v)
                 for i, v in enumerate(values)]
    return rec, rows


def read_v1(path: Path) -> V1Run:
    """Every record of a schema-1 run directory, migrated."""
    out = V1Run()
    folder = path / "records"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            rec, rows = record_v1(json.loads(p.read_text()))
        except (ValueError, KeyError, TypeError) as e:
            raise ProtolabError(f"{p}: not a schema-1 record this protolab can migrate ({e.__class__.__name__}: "
                                f"{str(e).splitlines()[0]})") from None
        out.records.append(rec)
        out.series += rows
    out.records.sort(key=lambda r: r.seq)
    return out
