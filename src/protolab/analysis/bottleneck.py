"""The bottleneck, named: what held a cell back — the wire, a saturated CPU user, or neither (docs/report.md: "The
bottleneck, named"). On the medians of a cell's repeats, failed windows left out:

1. wire: measured IOPS ≥ WIRE_SHARE of the wire model's ceiling (`analysis.wire.ceiling`).
2. cpu: the first CPU user at ≥ CPU_SHARE of what it can use — one thread-like user (a server's busiest
   thread, QEMU's, fio's busiest job, a server process without trustworthy thread data, one core's
   softirq) of one core; a server's threads or fio's jobs together of min(threads, cores) cores; this
   run's own CPU of the machine's cores. The role's only worker (one fio job; a thread with ≥ 90 % of its
   process's CPU) counts with its demand, per repeat: its CPU plus its role's wait for a CPU (PSI 'some').
   Else a role that waited for a CPU ≥ WAIT_SHARE of the window: CPU time it did not get. A role whose CPU
   the configuration capped (cpu_limit) at ≥ CPU_SHARE of its limit comes first: the limit held it.
3. storage: with a device model under the pool ([lab.storage]), measured IOPS ≥ STORAGE_SHARE of what the model
   gives with every one of its servers busy (plan.storage: parallelism / service time, capped by throughput).
4. none: neither, latency-bound (or held by the storage, where no device model says what it can do).
5. unknown: no CPU telemetry, or an unmodelled wire.
Other work is never named: it shows as a role's wait, and a busy machine (> derived.BUSY_OTHER_SHARE
of it other work) is stated beside the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Collection, Iterable, Literal

from ..plan.coordinates import Point, point_of
from ..results.records import BusiestThread, CellRecord
from .derived import BUSY_OTHER_SHARE

WIRE_SHARE = 0.90
STORAGE_SHARE = 0.90
CPU_SHARE = 0.90
WAIT_SHARE = 0.25
ROLE_NAMES = {"loadgen": "fio", "hypervisors": "QEMU"}  # 'servers': the server that used the most CPU
#: scopes of one thread-like CPU user (saturated at one core), then aggregates, then the machine
SINGLE, SPREAD = ("thread", "job", "job mean", "process", "core"), ("threads", "jobs")

Kind = Literal["wire", "storage", "cpu", "none", "unknown"]


@dataclass(frozen=True)
class Usage:
    """One CPU user's median share of one core over a cell's repeats, and where it saturates."""

    what: str  # 'tgtd', 'ganesha.nfsd', 'nbdkit', 'fio', 'QEMU', 'softirq', 'machine'
    scope: str  # 'thread', 'job', 'job mean', 'process', 'core', 'threads', 'jobs', 'cores', 'wait', 'limit'
    share: float  # cores busy (1.0 = one core); for 'wait', the share of the window spent waiting for a CPU
    limit: float  # cores at which it counts as saturated
    demand: float | None = None  # share + its role's wait for a CPU (median of the repeats' sums)

    @property
    def saturated(self) -> bool:
        """At or above CPU_SHARE of what it can use (a role's wait for a CPU: WAIT_SHARE of the window)."""
        if self.scope == "wait":
            return reaches(self.share, WAIT_SHARE)
        return reaches(max(self.share, self.demand or 0.0) / self.limit, CPU_SHARE)

    def who(self) -> str:
        """'tgtd's busiest thread', 'fio's busiest job', 'nbdkit'."""
        return {"thread": f"{self.what}'s busiest thread", "job": f"{self.what}'s busiest job",
                "job mean": f"{self.what}'s jobs (mean)"}.get(self.scope, self.what)


@dataclass(frozen=True)
class Bottleneck:
    """What held one cell (workload × configuration × load point) back, and the figures that say so."""

    kind: Kind
    what: str  # 'wire', 'array', the held CPU user's name, or ''
    ceiling_share: float | None  # median measured IOPS / the wire model's ceiling IOPS
    held: Usage | None  # the saturated CPU user (kind 'cpu')
    busiest: Usage | None  # the busiest single thread, job or process, for context
    reason: str = ""  # why 'unknown'
    crowded: tuple[float, float] | None = None  # (machine busy, other work's part), shares of its cores
    device_share: float | None = None  # median measured IOPS / the device model's saturation IOPS

    @property
    def label(self) -> str:
        """The table's 'limited by' cell: 'wire 93 %', 'tgtd CPU 97 %', 'machine CPU 95 %', 'none', 'unknown'."""
        if self.kind == "wire" and self.ceiling_share is not None:
            return f"wire {_pct(self.ceiling_share)} %"
        if self.kind == "storage" and self.device_share is not None:
            return f"array {_pct(self.device_share)} %"
        if self.kind == "cpu" and (h := self.held) is not None:
            waited = h.demand is not None and h.demand - h.share >= 0.005
            if h.scope == "limit":
                return f"{self.what} CPU {_pct(h.share / h.limit)} % of its {h.limit:g}-core limit"
            return f"{self.what} CPU{' wait' if h.scope == 'wait' else ''} " \
                f"{_pct(max(h.share, h.demand or 0) / h.limit)} %{' incl. wait' if waited else ''}"
        return f"{self.kind} (machine busy)" if self.crowded else self.kind


def reaches(share: float, threshold: float) -> bool:
    """``share`` ≥ ``threshold`` in whole percent, as the sentences show them (89.7 % reads, and counts, as 90 %)."""
    return round(100 * share) >= round(100 * threshold)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}"


def pct_span(xs: Iterable[float]) -> str:
    """'45 %' or '45–52 %' (rounded ends) for one or several values."""
    xs = list(xs)
    lo, hi = _pct(min(xs)), _pct(max(xs))
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def usages(records: Iterable[CellRecord]) -> list[Usage]:
    """Every CPU user the records show, each as the median over the repeats that have it."""
    recs = list(records)
    # a server's threads are trusted in every repeat or in none, so its repeats' medians share one scope
    untrusted = {name for r in recs if r.telemetry for name, s in r.telemetry.servers_cpu_s.items()
                 if s and not _threads_hold(r.telemetry.server_threads.get(name), s)}
    seen: dict[tuple[str, str], list[Usage]] = {}
    for r in recs:
        for u in _record_usages(r, untrusted):
            seen.setdefault((u.what, u.scope), []).append(u)
    return [Usage(w, s, median(u.share for u in us), median(u.limit for u in us),
                  median(u.demand for u in us) if all(u.demand is not None for u in us) else None)
            for (w, s), us in seen.items()]


def _threads_hold(th: BusiestThread | None, process_s: float) -> bool:
    """Whether the threads alive at the window's end hold >= 90 % of the process's CPU (nbdkit's
    per-connection threads end with fio's connection, leaving only its idle main thread)."""
    return th is not None and (th.live_cpu_s is None or th.live_cpu_s >= CPU_SHARE * process_s)


def _record_usages(r: CellRecord, untrusted: Collection[str] = ()) -> list[Usage]:
    t, res = r.telemetry, r.result
    win = t.elapsed_s if t is not None and t.elapsed_s > 0 else None
    cores = max(1, round(t.machine_total_s / t.elapsed_s)) if win and t.machine_total_s else None
    out = []
    waits = {k: v / win for k, v in t.roles_cpu_wait_s.items()} if t is not None and win else {}

    def one(what: str, scope: str, share: float, role: str, alone: bool) -> Usage:
        # the role's wait is this user's only when it is the role's one worker: a single fio job, a thread
        # holding >= 90 % of its process's CPU (with 4 jobs or 90 ganesha threads it is any task's wait)
        return Usage(what, scope, share, 1, share + waits[role] if alone and role in waits else None)

    if res.job_cpu_share_max is not None:
        out.append(one("fio", "job", res.job_cpu_share_max, "loadgen", res.jobs == 1))
    elif res.per_host_cpu_s and res.jobs and res.runtime_s > 0:
        out.append(one("fio", "job mean", sum(res.per_host_cpu_s.values()) / res.jobs / res.runtime_s, "loadgen",
                       res.jobs == 1))
    if res.per_host_cpu_s and res.jobs > 1 and res.runtime_s > 0:
        out.append(Usage("fio", "jobs", sum(res.per_host_cpu_s.values()) / res.runtime_s, min(res.jobs, cores or 1)))
    if t is None or win is None:
        return out
    for name, s in t.servers_cpu_s.items():
        if s is None:
            continue
        th = None if name in untrusted else t.server_threads.get(name)
        if th is None:  # no per-thread data: the process at one core counts as saturated
            out.append(Usage(name, "process", s / win, 1))  # threads unknown: its role's wait is not its own
            continue
        out.append(one(name, "thread", th.cpu_s / win, "servers", th.cpu_s >= CPU_SHARE * s))
        if th.threads > 1:
            out.append(Usage(name, "threads", s / win, min(th.threads, cores or 1)))
    if t.hypervisor_thread is not None:
        hv = sum(t.hypervisor_cpu_s.values())
        out.append(one("QEMU", "thread", t.hypervisor_thread.cpu_s / win, "hypervisors",
                       t.hypervisor_thread.cpu_s >= CPU_SHARE * hv))
        if t.hypervisor_cpu_s and t.hypervisor_thread.threads > 1:
            out.append(Usage("QEMU", "threads", sum(t.hypervisor_cpu_s.values()) / win,
                             min(t.hypervisor_thread.threads, cores or 1)))
    named = {k: v for k, v in t.servers_cpu_s.items() if v}

    def who(role: str) -> str:
        return ROLE_NAMES.get(role) or (max(named, key=lambda k: named[k]) if named else role)

    for role, cap in t.roles_cpu_limit.items():  # a capped role: its CPU against its limit (cpu_limit)
        if (used := t.roles_cpu_s.get(role)) is not None:
            out.append(Usage(who(role), "limit", used / win, cap))
    for role, wait in waits.items():
        out.append(Usage(who(role), "wait", wait, 1))
    if t.cores_softirq_s:
        out.append(Usage("softirq", "core", max(t.cores_softirq_s) / win, 1))
    if cores and t.machine_total_s:  # this run's own CPU, and the rest of the machine's busy time (other work),
        per_core = t.machine_total_s / cores  # in /proc/stat's own seconds, as derived.machine_other_share
        ours = sum(t.roles_cpu_s.values()) if t.roles_cpu_s else sum(v for v in t.servers_cpu_s.values() if v) + \
            sum(res.per_host_cpu_s.values())
        out.append(Usage("machine", "cores", min(ours / per_core, cores), cores))
        if t.machine_busy_s is not None:
            out.append(Usage("other work", "cores", max(0.0, t.machine_busy_s - ours) / per_core, cores))
    return out


def _rank(u: Usage) -> tuple[int, float]:
    return ({"limit": -1, "wait": 3, "cores": 2}.get(u.scope, 0 if u.scope in SINGLE else 1), -u.share / u.limit)


def assess(records: Iterable[CellRecord], ceiling_iops: float | None, *, has_wire: bool = True,
           device_iops: float | None = None) -> Bottleneck:
    """What held one cell back, from its repeats, the wire model's ceiling (None: no model or no wire) and the
    device model's saturation IOPS (None: no device model under the pool)."""
    recs = list(records)
    recs = [r for r in recs if not r.failed] or recs
    shares = [r.result.iops / ceiling_iops for r in recs if ceiling_iops]
    ceil = median(shares) if shares else None
    dev = median(r.result.iops / device_iops for r in recs) if device_iops else None
    us = usages(recs)
    singles = [u for u in us if u.scope in SINGLE and u.what != "softirq"]
    busiest = max(singles, key=lambda u: u.share) if singles else None
    if ceil is not None and reaches(ceil, WIRE_SHARE):
        return Bottleneck("wire", "wire", ceil, None, busiest, device_share=dev)
    if dev is not None and reaches(dev, STORAGE_SHARE):
        return Bottleneck("storage", "array", ceil, None, busiest, device_share=dev)
    mine, other = (next((u for u in us if u.what == w), None) for w in ("machine", "other work"))
    crowded = None
    if mine and other and (mine.share + other.share) >= CPU_SHARE * mine.limit \
            and other.share > BUSY_OTHER_SHARE * other.limit:
        crowded = ((mine.share + other.share) / mine.limit, other.share / other.limit)
    hot = sorted((u for u in us if u.saturated and u.what != "other work"), key=_rank)
    if hot:
        return Bottleneck("cpu", hot[0].what, ceil, hot[0], busiest, "", crowded, dev)
    if not any(u.what not in ("fio", "machine") for u in us):
        return Bottleneck("unknown", "", ceil, None, busiest, "no CPU telemetry of the servers or the machine",
                          crowded, dev)
    if has_wire and ceil is None:
        return Bottleneck("unknown", "", ceil, None, busiest, "no wire model for this link", crowded, dev)
    return Bottleneck("none", "", ceil, None, busiest, "", crowded, dev)


Cell = tuple[str, Point, str]  # workload, point, configuration


def bottlenecks(records: Iterable[CellRecord], ceilings: dict[tuple[str, str], float | None],
                wired: dict[str, bool], devices: dict[tuple[str, str], float] | None = None) -> dict[Cell, Bottleneck]:
    """Each cell's bottleneck; ``ceilings`` maps (workload, configuration) to the wire's ceiling IOPS,
    ``wired`` a configuration to whether a wire lies between load and storage (unknown: True), ``devices``
    (workload, configuration) to the device model's saturation IOPS (none: no device model)."""
    cells: dict[Cell, list[CellRecord]] = {}
    for r in records:
        cells.setdefault((r.workload, point_of(r), r.configuration), []).append(r)
    devices = devices or {}
    return {k: assess(v, ceilings.get((k[0], k[2])), has_wire=wired.get(k[2], True),
                      device_iops=devices.get((k[0], k[2]))) for k, v in cells.items()}
