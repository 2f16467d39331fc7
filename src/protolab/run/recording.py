"""A measured window as a typed record (schema 2) and its per-interval series rows."""

from __future__ import annotations

from ..conventions import digits
from ..engine.measure import HostRun
from ..engine.parse import parse_fio_json
from ..engine.readback import ReadBack, mismatches
from ..plan.expand import Cell
from ..results.files import now
from ..results.records import OUT_OF_STEP_S, CellRecord, DeviceTime, SeriesRow, Verified, Warmup
from ..results.rundir import RunDir
from ..telemetry.devicetime import DeviceCounters
from .procedure import Window_


def coords(cell: Cell) -> dict[str, str | int]:
    """A cell's named dimensions: the base four, then what its stage steps add (a fill level: fill = N; an aging
    step: stage = "age" and age_s, its aging time at its start)."""
    return {"workload": cell.workload.name, "configuration": cell.configuration.name, "load": cell.load_index,
            "repeat": cell.repeat, **cell.coords()}


def host_names(hosts: list[HostRun], keys: list[str]) -> dict[str, str]:
    """fio's 'HOST:PORT' keys (and log-file suffixes) → the plan's host names."""
    out = {}
    for key in keys:
        hostname, _, port = key.rpartition(":")
        for h in hosts:
            if h.agent is not None and h.agent.matches(hostname or key, int(port) if digits(port) else None):
                out[key] = h.name
    # log file suffixes are the client's host names without port; a direct run's key is 'local'
    for h in hosts:
        if h.agent is not None:
            out[h.agent.client_arg().removeprefix("sock:").split(",")[0]] = h.name
        else:
            out["local"] = h.name
    return out


#: The failed chunks' offsets a record keeps (their count is kept whole).
MOST_BAD_OFFSETS = 20


def verified(algorithm: str, chunk: int, during: list[str], after: ReadBack) -> Verified:
    """What the verification of one window found: the chunks fio's lines named during the window and in the
    read-back after it, each counted once; the read-back's own count where it named fewer."""
    during_bad = mismatches(during)
    offsets = sorted({m.offset for m in [*during_bad, *after.bad]})
    unnamed = max(0, after.counted - len(after.bad))  # fio counted failed checks it printed no line for
    return Verified(algorithm=algorithm, verified_bytes=after.verified_bytes, mismatches=len(offsets) + unnamed,
                    first_bad_offset=offsets[0] if offsets else None, during_window=len(during_bad),
                    bad_offsets=offsets[:MOST_BAD_OFFSETS], chunk=chunk, errors=after.errors)


def device_time(counted: DeviceCounters | None) -> DeviceTime | None:
    """The device model's time per request over a window (its counters' difference, ``counted``; None: no device
    model, or its counters could not be read): requests answered and their mean queue and service time (0 without
    requests). A request is the daemon's (one per fio I/O on the lab's O_DIRECT paths; fewer where a page cache
    answers, more where the kernel splits a large I/O)."""
    if counted is None:
        return None
    reads, writes = round(counted.reads), round(counted.writes)  # whole again after interpolation
    return DeviceTime(requests=reads + writes, reads=reads, writes=writes, queue_us=round(counted.mean_queue_us(), 3),
                      service_us=round(counted.mean_service_us(), 3))


def make_record(rundir: RunDir, *, seq: int, session: int, cell: Cell, baseline: str, hosts: list[HostRun],
                window: Window_, warmup: Warmup, steadiness,
                interval_s: int = 1) -> tuple[CellRecord, list[SeriesRow]]:
    """The record of one measured window, and its per-host series rows (the merged "all" rows were written
    while the window ran: see Procedure.window)."""
    meas = window.measurement
    result = parse_fio_json(meas.json_text)
    names = host_names(hosts, [*result.per_host_iops, *meas.series_by_host])
    update: dict = {"per_host_iops": {names.get(k, k): v for k, v in result.per_host_iops.items()},
                    "per_host_cpu_s": {names.get(k, k): v for k, v in result.per_host_cpu_s.items()}}
    failed = result.errors > 0  # a job ended with an error: the run cannot go on, resume measures it again
    if window.fault is not None and window.fault.kind is not None:  # under a fault, an error is what it measures
        failed = False
    if meas.op_errors:  # fio printed failed operations but counted none: they are errors all the same
        n = len(meas.op_errors)
        update |= {"errors": result.errors + n, "error_messages": [
            *result.error_messages, f"fio reported {n} failed I/O operation{'s' if n != 1 else ''} "
            f"that its job error count missed, first: {meas.op_errors[0][:160]}"]}
    result = result.model_copy(update=update)
    lp = cell.load_point
    raw = rundir.path / "raw" / f"{cell.id}.measure.json"
    rec = CellRecord(
        run_id=rundir.run_id, seq=seq, session=session, cell_id=cell.id, coords=coords(cell),
        baseline=cell.configuration.name == baseline, hosts=lp.hosts, streams_per_host=lp.streams,
        oio_per_stream=cell.oio, total_oio=cell.total_oio, started=window.started, ended=now(),
        status="failed" if failed else "ok", result=result, telemetry=window.telemetry, warmup=warmup,
        steady=steadiness, host_names=[h.name for h in hosts], raw_output=str(raw.relative_to(rundir.path)),
        job_file=str((rundir.path / "raw" / f"{cell.id}.measure.{hosts[0].name}.fio").relative_to(rundir.path)),
        out_of_step_s=round(window.out_of_step_s, 3) if window.out_of_step_s > OUT_OF_STEP_S else None,
        fault=window.fault, service_times=window.service_times,
        device_time=device_time(window.device),
    )
    offset = window.t0_s
    rows = []
    for key, values in meas.series_by_host.items():
        rows += [SeriesRow(seq=seq, cell_id=cell.id, phase="measure", host=names.get(key, key),
                           t_s=offset + (i + 1.0) * interval_s, iops=round(v, 3), session=session)
                 for i, v in enumerate(values)]
    return rec, rows
