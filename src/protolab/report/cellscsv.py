"""cells.csv at a report's end: one row per record with today's derived figures and the plan's place of each
configuration, written by a forked process while the report's own process builds the rest.

The report's process is a report's critical path (reading, statistics, findings, pages); the 10,000 rows of a
10,000-window run took it ~1 s, which the other core now spends meanwhile. The process is forked before the
drawing workers' threads exist (report.drawer starts them with its first batch), with the run's stop signals
held as the drawer holds them. If it fails or is killed, this process writes cells.csv itself, so a failure
reads as it always did: one line naming the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results.records import CellRecord
    from ..results.rundir import RunDir


def configuration_columns(plan) -> dict[str, dict[str, str]]:
    """cells.csv's columns that come from the plan, per configuration: its protocol (plan.protocols; '' for a
    path), the VMs' virtual disk controller ('' without VMs, and for a kernel data path: no virtual disk) and the
    lab pool's device model (plan.storage; '' for a target outside the lab)."""
    if plan is None:
        return {}
    from ..plan.target_grammar import is_lab_target, protocol_named
    from ..plan.topology import LabSpec

    lab = getattr(plan, "lab", None)
    if isinstance(lab, dict):  # a plan read back from a manifest keeps its [lab] as data
        lab = LabSpec.model_validate(lab)
    device = lab.device.name if lab is not None else ""

    hv = getattr(plan, "hypervisor", None)
    if isinstance(hv, dict):  # a plan read back from a manifest keeps its [hypervisor] as data
        from ..plan.hypervisor import Hypervisor

        hv = Hypervisor.model_validate(hv)
    from ..plan.servers import kernel_path

    default = hv.controller if hv is not None else None
    out = {}
    for c in plan.configurations:
        protocol = protocol_named(plan.target_of(c).url) or ""
        # the guest's kernel attaches it: no virtual disk
        kernel = kernel_path(plan.target_of(c).url, getattr(c, "server", None))
        out[c.name] = {"protocol": protocol,
                       "controller": (c.controller or default or "") if default is not None and not kernel else "",
                       "device_model": device if is_lab_target(plan.target_of(c).url) else ""}
    return out


def write(rundir: RunDir, records: list[CellRecord], plan: Any) -> None:
    """Rewrite the run's cells.csv from ``records``, with today's formulas (also for old runs)."""
    from ..analysis.derived import figures as derived

    place = configuration_columns(plan)
    at = swept_models(plan, records)
    wired = {c: _wired(cols["protocol"]) for c, cols in place.items()}
    rundir.write_csv(records, lambda r: {**place.get(r.configuration, {}), **at(r), **derived(r).csv_fields(),
                                         **fault_columns(r), **breakdown_columns(r, wired.get(r.configuration, True))})


def _wired(protocol: str) -> bool:
    from ..plan.protocols import PROTOCOLS

    return protocol in PROTOCOLS and PROTOCOLS[protocol].tcp


def breakdown_columns(r: CellRecord, wired: bool = True) -> dict[str, Any]:
    """A window's latency breakdown for cells.csv (analysis.time_breakdown; results.rundir.BREAKDOWN_COLUMNS): each
    component measured on its own in its column (µs per I/O), every part in ``time_parts`` ('initiator + network
    120.5; server 80.1; device 100.2': a folded part under both names), the parts against fio's mean (%); {} when
    nothing below fio's mean was measured."""
    if r.device_time is None and r.service_times is None:
        return {}
    from ..analysis.time_breakdown import of_record

    b = of_record(r, wired)
    if b is None or not b.measured:
        return {}
    out: dict[str, Any] = {f"time_{p.name}_us": round(p.us, 3) for p in b.parts if " + " not in p.name}
    return out | {"time_parts": "; ".join(f"{p.name} {p.us:.1f}" for p in b.parts),
                  "time_residual_pct": round(b.residual_pct, 3)}


def fault_columns(r: CellRecord) -> dict[str, Any]:
    """A window's fault figures for cells.csv (analysis.fault_figures; results.rundir.FAULT_COLUMNS), {} without a
    timeline."""
    from ..analysis.fault_figures import figures

    f = figures(r) if r.fault is not None else None
    if f is None:
        return {}
    return {"stall_ms": f.stall_ms, "unanswered_ms": f.unanswered_ms, "io_errors": f.errors,
            "degraded_iops": None if f.degraded_iops is None else round(f.degraded_iops, 1),
            "recovery_s": f.recovery_s}


def swept_models(plan: Any, records: list[CellRecord]):
    """Per record, the `device_model` it was measured over when the plan sweeps the service time (plan.sweep):
    the model at that time ('500us ×64, no throughput cap, no cache'); {} otherwise."""
    lab = getattr(plan, "lab", None)
    if isinstance(lab, dict):
        from ..plan.topology import LabSpec

        lab = LabSpec.model_validate(lab)
    if lab is None or lab.device.is_ram or not any("service_time" in r.coords for r in records):
        return lambda r: {}
    from ..plan.sweep import device_model_at
    from ..plan.target_grammar import is_lab_target

    lab_configs = {c.name for c in plan.configurations if is_lab_target(plan.target_of(c).url)}
    names: dict[Any, str] = {}

    def at(r: CellRecord) -> dict[str, str]:
        us = r.coords.get("service_time")
        if us is None or r.configuration not in lab_configs:
            return {}
        if us not in names:
            names[us] = device_model_at(lab.device, r.coords).name
        return {"device_model": names[us]}
    return at


def _child(rundir: RunDir, records: list[CellRecord], plan: Any, ends: list[Any], mask: Any) -> None:
    import os
    import signal

    for pipe in ends:  # the drawing workers end when the report's process closes its pipes: never held here
        pipe.close()

    def leave(*_: Any) -> None:
        raise SystemExit(1)  # atomic_write removes its temporary file on the way out

    signal.signal(signal.SIGTERM, leave)  # not the run's handlers: a stop ends this process too
    signal.signal(signal.SIGHUP, leave)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the parent decides
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        write(rundir, records, plan)
    except BaseException:  # noqa: BLE001 — the parent writes it again and says what went wrong, in one line
        os._exit(1)
    os._exit(0)


class CellsCsv:
    """cells.csv being written by a forked process (in this process where there is one core or no fork)."""

    def __init__(self, rundir: RunDir, records: list[CellRecord], plan: Any, ends: list[Any] | None = None) -> None:
        """Fork the writer; ``ends``: this process's ends of pipes the writer must not hold open (report.drawer's)."""
        import os

        self.args = (rundir, records, plan)
        self.process: Any = None
        if (os.cpu_count() or 1) < 2:
            return
        import multiprocessing as mp

        from ..analysis.derived import figures
        from .drawer import held_stops

        for r in records:  # derived here, where the report needs them too: the writer inherits them (cached)
            figures(r)
        try:
            with held_stops() as held:  # as the drawer's forks: see report.drawer
                p = mp.get_context("fork").Process(target=_child, args=(*self.args, list(ends or []), held),
                                                   daemon=True, name="protolab-cells-csv")
                p.start()
                self.process = p
        except (OSError, ValueError):
            self.process = None

    def finish(self) -> None:
        """Wait for cells.csv; write it here if the forked process did not."""
        p, self.process = self.process, None
        if p is not None:
            p.join()
            if p.exitcode == 0:
                return
        write(*self.args)

    def stop(self) -> None:
        """The report failed: the forked process, if still there, ends now."""
        p, self.process = self.process, None
        if p is not None:
            p.terminate()  # SIGTERM: it leaves no temporary file behind
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
