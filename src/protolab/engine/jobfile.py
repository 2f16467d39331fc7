"""fio job files for a cell: one job per load stream, warm-up kept out of the numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..plan.expand import Cell
from ..plan.model import Method, Workload
from ..plan.preflight import ALIGN, region  # noqa: F401  (one owner of the layout rule; re-exported)
from ..plan.safety import has_control
from ..plan.units import format_size
from ..plan.verify import Verification
from .targets import Access


def rw_options(w: Workload) -> dict[str, str]:
    """fio's rw / rwmixread / percentage_random for an access spec."""
    rnd = w.random_pct > 0
    if w.read_pct >= 100:
        rw = "randread" if rnd else "read"
    elif w.read_pct <= 0:
        rw = "randwrite" if rnd else "write"
    else:
        rw = "randrw" if rnd else "rw"
    out = {"rw": rw}
    if 0 < w.read_pct < 100:
        out["rwmixread"] = f"{w.read_pct:g}"
    if 0 < w.random_pct < 100:
        out["percentage_random"] = f"{w.random_pct:g}"
    return out


def bs_options(w: Workload) -> dict[str, str]:
    """bs, or bssplit for a mix of sizes (weights as whole percentages)."""
    if isinstance(w.block_size, int):
        return {"bs": str(w.block_size)}
    sizes = w.sizes()
    pct = {s: round(100 * f) for s, f in sizes.items()}
    drift = 100 - sum(pct.values())
    first = next(iter(pct))
    pct[first] += drift
    return {"bssplit": ":".join(f"{format_size(s)}/{p}" for s, p in pct.items() if p > 0)}


def rate_per_direction(iops: int, read_pct: float) -> str:
    """fio's rate_iops for a cap on the stream's total: one value caps reads and writes each (checked on fio
    3.33: rate_iops=200 at 75 % read gave 393 IOPS, 48 % of them reads), so a mix gets 'READS,WRITES' split
    by read_pct — each at least 1, since 0 would mean no cap at all."""
    if read_pct <= 0 or read_pct >= 100:
        return str(iops)
    reads = min(iops - 1, max(1, round(iops * read_pct / 100))) if iops > 1 else 1
    return f"{reads},{max(1, iops - reads)}"


def shape_options(w: Workload) -> dict[str, str]:
    """fio's own options for the load's shape: rate, arrivals, bursts, think time, hot zones."""
    out: dict[str, str] = {}
    if w.rate_iops:
        out["rate_iops"] = rate_per_direction(w.rate_iops, w.read_pct)
    if w.arrivals == "poisson":
        out["rate_process"] = "poisson"
    if w.bursts is not None:  # ios I/Os as fast as the OIO allows, then a pause (see plan.shape.Bursts)
        out |= {"thinktime": str(round(w.bursts.pause * 1e6)), "thinktime_blocks": str(w.bursts.ios)}
    if w.think_time is not None:
        out |= {"thinktime": str(round(w.think_time * 1e6)), "thinktime_blocks": str(w.think_every)}
    if w.skew is not None:
        out["random_distribution"] = w.skew.fio()
    if w.hot_zones is not None:
        out["random_distribution"] = "zoned:" + ":".join(f"{z.io_pct}/{z.space_pct}" for z in w.hot_zones)
    return out


def fio_seconds(seconds: float) -> str:
    """A time for a job file: whole seconds, or whole milliseconds with fio's 'ms' suffix; never 1e+08."""
    ms = round(seconds * 1000)
    return str(ms // 1000) if ms % 1000 == 0 else f"{ms}ms"


def _section(name: str, opts: dict[str, str]) -> list[str]:
    # a value or name with a line break would add lines to the job file: the plan refuses them, and so do we
    for k, v in opts.items():
        if has_control(str(k)) or has_control(str(v)):
            raise ValueError(f"job option {k!r} holds a control character")
    if has_control(name):
        raise ValueError(f"job name {name!r} holds a control character")
    return [f"[{name}]", *(f"{k}={v}" for k, v in opts.items()), ""]


@dataclass(frozen=True)
class Stream:
    """One load stream of a cell: its global index, how it reaches the target, and its region."""

    index: int
    access: Access
    offset: int
    size: int


def layout(cell: Cell, access_for: Callable[[int, int], Access]) -> list[list[Stream]]:
    """Streams per host: host h's stream i is global stream h×S+i with its own disjoint region.

    ``access_for(host, global_index)`` says how that stream reaches the target (its path).
    """
    per_host = cell.load_point.streams
    first = access_for(0, 0)
    share = region(first.size, cell.streams, cell.workload)
    hosts = []
    for h in range(cell.load_point.hosts):
        hosts.append([Stream(g, access_for(h, g), g * share, share)
                      for g in range(h * per_host, (h + 1) * per_host)])
    return hosts


def render_streams(
    cell: Cell,
    streams: list[Stream],
    *,
    runtime: float,
    extra: dict | None = None,
    log_prefix: str | None = None,
    ramp: float = 0.0,
    iologs: dict[int, str] | None = None,
    verify: Verification | None = None,
) -> str:
    """A job file with one job per stream (``runtime`` seconds, time based); IOPS logged per second.

    A replayed trace (``iologs``: each stream's iolog, see engine.replay) gives the streams their I/Os:
    no access spec, and the run ends with the trace or at ``runtime``, whichever comes first. ``verify``: a
    workload that writes writes checksummed blocks and reads each back (engine.readback).
    """
    w = cell.workload
    replay = w.replay is not None
    glob: dict[str, str] = {} if replay else rw_options(w) | bs_options(w)
    glob |= {"iodepth": str(cell.oio)}
    glob |= {"runtime": fio_seconds(runtime)} if replay else {"time_based": "1", "runtime": fio_seconds(runtime)}
    glob |= {"randrepeat": "0", "norandommap": "1"}
    if ramp and not replay:
        glob["ramp_time"] = fio_seconds(ramp)
    if replay and w.replay.no_stall:
        glob["replay_no_stall"] = "1"
    glob |= shape_options(w)
    rate = cell.step("rate")  # an offered rate of the capacity ladder (plan.rate_ladder): shared by the streams
    shares = rate.per_stream(cell.streams) if rate is not None else []
    if rate is not None and rate.arrivals == "poisson":
        glob["rate_process"] = "poisson"
    if log_prefix:
        glob |= {"write_iops_log": log_prefix, "log_avg_msec": "1000"}
    if verify is not None and w.read_pct < 100:
        glob |= write_options(verify, random=w.random_pct > 0)
    for k, v in (extra or {}).items():
        glob[k] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    lines = [f"# protolab cell {cell.id}".replace("\n", " "), *_section("global", glob)]
    for st in streams:
        a = st.access
        opts = {"ioengine": a.ioengine, **a.options}
        if replay:  # the iolog names the file and holds each I/O's offset, inside the stream's region
            if iologs is None or st.index not in iologs:
                raise ValueError(f"stream {st.index} replays a trace but has no iolog")
            opts["read_iolog"] = iologs[st.index]
        else:
            if a.filename:
                opts["filename"] = a.filename
            opts |= {"offset": str(st.offset), "size": str(st.size)}
        if shares:
            opts["rate_iops"] = rate_per_direction(shares[st.index], w.read_pct)
        lines += _section(f"stream-{st.index}", opts)
    return "\n".join(lines)


def render_job(cell: Cell, access: Access, method: Method, extra: dict | None = None) -> str:
    """A single-host job file for ``cell`` with the warm-up as fio's ramp_time (kept out of every number)."""
    streams = layout(cell, lambda h, g: access)
    return render_streams(cell, [s for host in streams for s in host], runtime=method.duration,
                          extra=extra, ramp=method.warmup)


def render_prepare(access: Access, verify: Verification | None = None) -> str:
    """A job that writes the whole target once, sequentially, so reads hit real data (``verify``: checksummed)."""
    glob = {"ioengine": access.ioengine, **access.options}
    glob |= {"rw": "write", "bs": "1M", "iodepth": "8", "size": str(access.size), "offset": "0"}
    glob |= _headers(verify)
    if access.filename:
        glob["filename"] = access.filename
    return "\n".join(["# protolab: fill the target once before the first cell", *_section("global", glob),
                      *_section("prepare", {})])


def render_fill(access: Access, offset: int, size: int, block_size: int, level: int,
                verify: Verification | None = None) -> str:
    """A job that writes ``size`` bytes of the target from ``offset`` sequentially: one fill level's new part
    (``verify``: checksummed)."""
    glob = {"ioengine": access.ioengine, **access.options}
    glob |= {"rw": "write", "bs": str(block_size), "iodepth": "8", "offset": str(offset), "size": str(size)}
    glob |= _headers(verify)
    if access.filename:
        glob["filename"] = access.filename
    return "\n".join([f"# protolab: fill the target to {level} % (bytes {offset} to {offset + size})",
                      *_section("global", glob), *_section("fill", {})])


#: Blocks a verified window's job writes before it reads them back (fio's verify_backlog; engine.readback).
VERIFY_BACKLOG = 64


def _headers(verify: Verification | None) -> dict[str, str]:
    return header_options(verify) if verify is not None else {}


def header_options(v: Verification) -> dict[str, str]:
    """fio options for protolab's own writes of the data (prepare, fill): a header on every chunk, no read pass."""
    return {"verify": v.algorithm, "verify_interval": str(v.interval), "do_verify": "0", "verify_state_save": "0"}


def write_options(v: Verification, *, random: bool) -> dict[str, str]:
    """fio options for a window's writes: checksummed chunks, each block read back soon after it is written, a
    mismatch counted and not fatal. ``random``: offsets from the LFSR generator, which with norandommap never
    writes one offset twice while it is in flight (fio's HOWTO, "verify")."""
    out = {"verify": v.algorithm, "verify_interval": str(v.interval), "verify_backlog": str(VERIFY_BACKLOG),
           "verify_fatal": "0", "continue_on_error": "verify", "verify_state_save": "0"}
    return out | ({"random_generator": "lfsr"} if random else {})
