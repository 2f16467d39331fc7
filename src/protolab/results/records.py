"""Typed, self-describing records of what was measured (schema-versioned, JSON-serialisable)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RECORD_SCHEMA = 1


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DirectionResult(_Record):
    """Reads or writes of one measured window, summed over every job."""

    ios: int = 0
    bytes: int = 0
    iops: float = 0.0
    mbps: float = Field(default=0.0, description="MB/s, 1 MB = 10^6 bytes")
    lat_mean_us: float | None = Field(default=None, description="completion latency mean (clat), µs")
    percentiles_us: dict[str, float | None] = Field(default_factory=dict)
    bins_ns: dict[int, int] = Field(default_factory=dict, description="merged clat histogram: bin ns → count")


class CellResult(_Record):
    """The numbers of one measured window of one cell (all jobs, all hosts)."""

    iops: float
    mbps: float
    read: DirectionResult
    write: DirectionResult
    lat_mean_us: float | None = Field(description="completion latency mean over reads and writes, µs")
    percentiles_us: dict[str, float | None] = Field(description="from the merged read+write histogram, µs")
    jobs: int
    runtime_s: float = Field(description="longest job's measured time")
    errors: int = Field(description="jobs that ended with an error")
    error_messages: list[str] = Field(default_factory=list)
    per_host_iops: dict[str, float] = Field(default_factory=dict)
    per_host_cpu_s: dict[str, float] = Field(
        default_factory=dict, description="load-generator CPU seconds per host (fio's usr+sys of its jobs)"
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="telemetry and derived figures")


class CellRecord(_Record):
    """One cell at one repeat: what was asked and what was measured."""

    schema_version: int = RECORD_SCHEMA
    run_id: str
    seq: int = Field(description="position in the run order, from 1")
    cell_id: str
    workload: str
    configuration: str
    baseline: bool
    load_index: int
    hosts: int
    streams_per_host: int
    oio_per_stream: int
    total_oio: int
    repeat: int
    started: str
    ended: str
    result: CellResult
    raw_output: str = Field(description="path of fio's json+ output, relative to the run directory")
    job_file: str = Field(description="path of the fio job file, relative to the run directory")
