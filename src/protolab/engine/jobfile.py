"""fio job files for a cell: one job per load stream, warm-up kept out of the numbers."""

from __future__ import annotations

from ..plan.expand import Cell
from ..plan.model import Method, Workload
from ..plan.units import format_size
from .targets import Access

ALIGN = 1024 * 1024  # stream regions start on 1 MiB boundaries


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


def region(size: int, streams: int, workload: Workload) -> int:
    """Bytes per stream: an equal share of the target, aligned, at least one block."""
    largest = max(workload.sizes())
    share = size // streams
    share -= share % ALIGN if share >= ALIGN else share % largest
    if share < largest:
        raise ValueError(f"{size} bytes is too small for {streams} streams of {largest}-byte I/Os")
    return share


def _section(name: str, opts: dict[str, str]) -> list[str]:
    return [f"[{name}]", *(f"{k}={v}" for k, v in opts.items()), ""]


def render_job(cell: Cell, access: Access, method: Method, extra: dict | None = None) -> str:
    """The job file for one measured window of ``cell`` against ``access``."""
    w = cell.workload
    glob: dict[str, str] = {"ioengine": access.ioengine, **access.options}
    glob |= rw_options(w) | bs_options(w)
    glob |= {
        "iodepth": str(cell.oio),
        "time_based": "1",
        "ramp_time": f"{method.warmup:g}",  # fio keeps the ramp out of every statistic
        "runtime": f"{method.duration:g}",
        "randrepeat": "0",
        "norandommap": "1",
        "file_service_type": "roundrobin",
    }
    if w.rate_iops:
        glob["rate_iops"] = str(w.rate_iops)
    if access.filename:
        glob["filename"] = access.filename
    for k, v in (extra or {}).items():
        glob[k] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    share = region(access.size, cell.streams, w)
    lines = [f"# protolab cell {cell.id}", *_section("global", glob)]
    for i in range(cell.streams):
        lines += _section(f"stream-{i}", {"offset": str(i * share), "size": str(share)})
    return "\n".join(lines)


def render_prepare(access: Access) -> str:
    """A job that writes the whole target once, sequentially, so reads hit real data."""
    glob = {"ioengine": access.ioengine, **access.options}
    glob |= {"rw": "write", "bs": "1M", "iodepth": "8", "size": str(access.size), "offset": "0"}
    if access.filename:
        glob["filename"] = access.filename
    return "\n".join(["# protolab: fill the target once before the first cell", *_section("global", glob),
                      *_section("prepare", {})])
