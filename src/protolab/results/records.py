"""Typed, self-describing records of what was measured (schema 2, JSON-serialisable).

A record holds what a window *measured*: fio's figures, the raw telemetry counters
(CPU seconds per role and process, bytes and packets per interface) and what the
warm-up did. Per-I/O figures (CPU µs, packets, wire bytes per I/O) are not stored:
`analysis.derived.figures` computes them from the counters, so a fixed formula
applies to old runs by re-running `protolab report`. A cell's place in the study
is `coords`, a mapping of named dimensions (workload, configuration, load, repeat,
and any a study adds, e.g. stage); per-interval series live beside the records as
rows (`series.csv`), not inside them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .faultwindow import FaultWindow
from .histogram import Histogram

RECORD_SCHEMA = 2
#: a client run whose fio servers' statuses fell further out of step than this (seconds) is marked in its record
OUT_OF_STEP_S = 0.5

#: The dimensions every cell has, in the order they nest in a study.
BASE_DIMENSIONS = ("workload", "configuration", "load", "repeat")


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
    bins_ns: Histogram = Field(default_factory=Histogram, description="merged clat histogram: bin ns → count")


class CellResult(_Record):
    """fio's numbers of one measured window of one cell (all jobs, all hosts)."""

    iops: float
    mbps: float
    read: DirectionResult
    write: DirectionResult
    lat_mean_us: float | None = Field(description="completion latency mean over reads and writes, µs")
    percentiles_us: dict[str, float | None] = Field(description="from the merged read+write histogram, µs")
    jobs: int
    runtime_s: float = Field(description="longest job's measured time")
    errors: int = Field(description="jobs that ended with an error, plus failed operations fio printed")
    error_messages: list[str] = Field(default_factory=list)
    per_host_iops: dict[str, float] = Field(default_factory=dict)
    per_host_cpu_s: dict[str, float] = Field(
        default_factory=dict, description="load-generator CPU seconds per host (fio's usr+sys of its jobs)"
    )
    job_cpu_share_max: float | None = Field(
        default=None, description="the busiest fio job's usr+sys as a share of one core over its runtime"
    )


class Traffic(_Record):
    """One interface's counters over a window."""

    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0


class BusiestThread(_Record):
    """A process's busiest thread over a window, and how many threads it had."""

    thread: str = Field(description="the thread's name (comm), e.g. 'tgtd', 'CPU 0/TCG'")
    cpu_s: float = Field(description="its user+system seconds in the window")
    threads: int = Field(default=1, description="live threads of the process (and its children) at the end")
    live_cpu_s: float | None = Field(default=None, description="CPU seconds of those live threads; less than the "
                                     "process's when threads that worked ended in the window (nbdkit's per connection)")


class Telemetry(_Record):
    """Raw counters read right before and right after the measured window (differences)."""

    elapsed_s: float
    machine_busy_s: float | None = None
    machine_total_s: float | None = None
    servers_cpu_s: dict[str, float | None] = Field(default_factory=dict, description="per storage server process")
    roles_cpu_s: dict[str, float] = Field(default_factory=dict, description="per role cgroup: servers, loadgen, …")
    roles_cpu_wait_s: dict[str, float] = Field(default_factory=dict, description="per role cgroup: seconds a task "
                                               "of it was ready to run but waited for a CPU (PSI cpu 'some')")
    roles_cpu_weight: Literal["highest"] | None = Field(default=None, description="'highest' when the roles (and "
                                                         "protolab) ran at the highest CPU weight the whole window "
                                                         "(method.cpu_priority); None: the machine's default")
    roles_cpu_limit: dict[str, float] = Field(default_factory=dict, description="per capped role: its CPU limit "
                                              "in cores the whole window (configuration cpu_limit)")
    roles_cpu_throttled_s: dict[str, float] = Field(default_factory=dict, description="per capped role: seconds "
                                                    "its tasks were held back by the limit (cpu.stat)")
    interfaces: dict[str, Traffic] = Field(default_factory=dict, description="'netns/ifname' → counters")
    offloads: dict[str, bool | None] = Field(default_factory=dict, description="segmentation offloads per port")
    storage_ports: list[str] = Field(default_factory=list, description="interfaces on the storage side of the wire")
    hypervisor_cpu_s: dict[str, float] = Field(default_factory=dict, description="QEMU threads of the VMs: "
                                               "'vcpu' (guest code) and 'io' (device emulation, initiators)")
    server_threads: dict[str, BusiestThread] = Field(default_factory=dict,
                                                     description="per storage server process: its busiest thread")
    hypervisor_thread: BusiestThread | None = Field(default=None, description="QEMU's busiest thread (all guests)")
    server_guest_cpu_s: float | None = Field(default=None, description="the storage server guest's own busy CPU "
                                             "seconds (its /proc/stat; kernel data paths, vm.guestcpu)")
    cores_softirq_s: list[float] = Field(default_factory=list, description="softirq seconds per core "
                                         "(/proc/stat, sampled at the tick)")


class Steadiness(_Record):
    """The SNIA PTS steady-state test over a series (see analysis.steady)."""

    steady: bool
    range_pct: float
    excursion_pct: float
    window_start: int
    window: int
    reason: str


class Warmup(_Record):
    """What the warm-up before a window did."""

    mode: Literal["none", "fixed", "until-steady"] = "none"
    seconds: float = 0.0
    ended_by: Literal["time", "steady", "maximum"] | None = None
    verdict: Steadiness | None = None


class CacheDrop(_Record):
    """A page cache dropped before a window (method.drop_caches): where, and /proc/meminfo's Cached around it."""

    host: str = Field(description="the load host's name ('this-machine' without [[hosts]]) or the server's")
    cached_kib_before: int | None = Field(default=None, description="/proc/meminfo Cached right before, KiB")
    cached_kib_after: int | None = Field(default=None, description="… right after the drop, KiB")


class Verified(_Record):
    """What method.verify found for one window (plan.verify, engine.readback): every block of its streams' regions
    read back after it and checked, and the blocks fio's read-backs during the window found bad."""

    algorithm: str = Field(description="fio's checksum: crc32c, md5 or sha256")
    verified_bytes: int = Field(description="bytes read back after the window and checked")
    mismatches: int = Field(description="checksummed chunks that failed a check, during the window or after it")
    first_bad_offset: int | None = Field(default=None, description="the lowest offset of a failed chunk, in bytes "
                                         "of the target; None: no mismatch")
    during_window: int = Field(default=0, description="… of them found by fio's read-backs while the window ran")
    bad_offsets: list[int] = Field(default_factory=list, description="the lowest offsets of failed chunks (≤ 20)")
    chunk: int = Field(default=0, description="bytes each checksum covers")
    errors: list[str] = Field(default_factory=list, description="read-back jobs that failed for another reason")


class DeviceTime(_Record):
    """The device model's own time per request over the measured window (its daemon's counters, read before and
    after the window): what the array took, the rest of the latency being the stack above it."""

    requests: int = Field(description="requests the device model answered in the window (reads + writes)")
    reads: int = 0
    writes: int = 0
    queue_us: float = Field(description="mean time a request waited for a free server, µs (arrival → service start)")
    service_us: float = Field(description="mean time from service start to the answer, µs (service, transfer, "
                              "stall)")


class ServicePoint(_Record):
    """Request→reply times of the protocol's commands seen at one capture point."""

    point: str = Field(description="'netns/ifname' captured")
    role: Literal["host", "server"] = Field(description="the load host's side of the link or the storage server's")
    srt_us: float | None = Field(default=None, description="mean request→reply time of matched pairs, µs")
    pairs: int = Field(default=0, description="requests matched to their replies")
    frames: int = Field(default=0, description="frames captured")
    dropped: int = Field(default=0, description="frames tcpdump counted as dropped (its kernel buffer was full): "
                         "requests or replies the mean misses")
    note: str | None = Field(default=None, description="why the point has no mean, or what makes it uncertain")


class ServiceTimes(_Record):
    """A sampled capture (method.breakdown) at both ends of the storage link during a sub-window of the measured
    window, dissected by tshark; and what the capture cost (IOPS inside and outside the sub-window)."""

    protocol: str
    start_s: float = Field(description="the capture's start, seconds into the measured window")
    seconds: float = Field(description="the captured sub-window's length")
    points: list[ServicePoint] = Field(default_factory=list)
    iops_captured: float | None = Field(default=None, description="the window's IOPS while the capture ran")
    iops_uncaptured: float | None = Field(default=None, description="… in the rest of the window")
    lat_captured_us: float | None = Field(default=None, description="fio's mean completion latency over the "
                                          "window's intervals inside the capture, µs: the I/Os the capture saw")
    device: DeviceTime | None = Field(default=None, description="the device model's time per request while the "
                                      "capture ran (its counters read as it started and stopped; None: no model)")


class CellRecord(_Record):
    """One cell at one repeat: where it sits in the study, and what was measured."""

    schema_version: Literal[2] = RECORD_SCHEMA
    run_id: str
    seq: int = Field(description="position in the run order, from 1 (resumed runs continue the count)")
    session: int = Field(default=1, description="which session of the run measured it (see manifest sessions)")
    cell_id: str
    coords: dict[str, str | int] = Field(description="the cell's dimensions: workload, configuration, load, "
                                         "repeat, and any a study adds")
    baseline: bool
    hosts: int
    streams_per_host: int
    oio_per_stream: int
    total_oio: int
    started: str
    ended: str
    status: Literal["ok", "failed"] = "ok"
    result: CellResult
    telemetry: Telemetry | None = None
    warmup: Warmup = Field(default_factory=Warmup)
    steady: Steadiness | None = Field(default=None, description="the measured window's own steady-state test")
    host_names: list[str] = Field(default_factory=list)
    repeat_reason: str | None = Field(default=None, description="why this repeat was measured (adaptive repeats: "
                                      "the interval or spread that asked for it)")
    out_of_step_s: float | None = Field(default=None, description="a client run's fio servers' statuses fell this "
                                        f"many seconds out of step (≥ {OUT_OF_STEP_S} s; None: in step): the "
                                        "window's boundaries are uncertain by as much")
    caches_dropped: list[CacheDrop] = Field(default_factory=list, description="the page caches dropped before "
                                            "the window (method.drop_caches)")
    verification: Verified | None = Field(default=None, description="method.verify: what the read-back found "
                                          "(None: not verified)")
    fault: FaultWindow | None = Field(default=None, description="a plan with faults: the window's fault, what was "
                                      "done when, fio's errors and the 10 ms timeline (plan.faults)")
    device_time: DeviceTime | None = Field(default=None, description="the device model's mean queue and service "
                                           "time per request in the window (None: no device model)")
    service_times: ServiceTimes | None = Field(default=None, description="method.breakdown: request→reply times "
                                               "captured at both ends of the link (None: not captured)")
    raw_output: str = Field(description="path of fio's json+ output, relative to the run directory")
    job_file: str = Field(description="path of the fio job file, relative to the run directory")

    def __init__(self, **data: Any) -> None:
        """Also workload=, configuration=, load_index=, repeat= in place of coords (for code that builds records
        by hand); the stored form is always coords. Not a "before" validator: with one, pydantic builds every
        stored record's Python dict before validating it (~20–30 % of reading a run's records)."""
        if "coords" not in data and "workload" in data:
            data["coords"] = {"workload": data.pop("workload"), "configuration": data.pop("configuration"),
                              "load": data.pop("load_index"), "repeat": data.pop("repeat")}
        super().__init__(**data)

    @property
    def workload(self) -> str:
        """The workload (access spec) name."""
        return str(self.coords["workload"])

    @property
    def configuration(self) -> str:
        """The configuration name."""
        return str(self.coords["configuration"])

    @property
    def load_index(self) -> int:
        """The load point's index in the plan."""
        return int(self.coords["load"])

    @property
    def repeat(self) -> int:
        """The repeat, from 1."""
        return int(self.coords["repeat"])

    @property
    def dimensions(self) -> dict[str, str | int]:
        """Dimensions beyond the base four (stage, fill level, controller …)."""
        return {k: v for k, v in self.coords.items() if k not in BASE_DIMENSIONS}

    @property
    def failed(self) -> bool:
        """Whether the window ended with a job error (the cell is measured again on resume)."""
        return self.status == "failed"


class SeriesRow(_Record):
    """One interval of one host in one window: a row of series.csv.

    The "all" rows of the measured window carry the interval's figures merged over every job and host
    (MB/s, and latencies from the summed histogram bins); per-host rows and warm-up rows carry IOPS only.
    A window that was interrupted keeps its rows (under its own seq and session) and has no record.
    """

    seq: int
    cell_id: str
    phase: str  # "warmup" or "measure"
    host: str  # a host name, or "all" for the sum over hosts
    t_s: float  # end of the interval, seconds from the window's start (an aging step's: from its sequence's start,
    #              the steps' measured time end to end)
    iops: float
    session: int = 1
    mbps: float | None = None
    lat_mean_us: float | None = None
    lat_p95_us: float | None = None
    lat_p99_us: float | None = None
    ios: int | None = None  # I/Os completed in the interval, every job and host (a weighted mean's weights)
    seconds: float | None = None  # the interval's length in the jobs' I/O time


SERIES_COLUMNS = list(SeriesRow.model_fields)
