"""`protolab limits`: the wire model's ceilings for a protocol, link, MTU and workload, as a table.

No `from __future__ import annotations` here: typer reads the annotations of
`limits_command` at registration time.
"""

from collections.abc import Mapping
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from protolab.errors import ProtolabError

from .wire import FCOE_MIN_MTU, LINKS, MODELLED_ONLY, PROTOCOLS, Ceiling, ceiling, parse_link

DEFAULT_BLOCK_SIZE = 8192
DEFAULT_READ_PCT = 100.0


def _format_size(n: int) -> str:
    for unit, p in (("G", 3), ("M", 2), ("k", 1)):
        if n % 1024**p == 0:
            return f"{n // 1024**p}{unit}"
    return str(n)


def _describe(block_size: int | Mapping[int, float], read_pct: float) -> str:
    if isinstance(block_size, Mapping):
        bs = "/".join(f"{_format_size(s)}:{w:g}" for s, w in block_size.items())
    else:
        bs = _format_size(int(block_size))
    return f"{bs}, {read_pct:g} % read"


def _count(x: float) -> str:
    """Frames and bytes: whole numbers plainly, expectations of mixes with two decimals."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else f"{x:,.2f}"


def limits_rows(
    protocols: list[str], link: str, mtu: int, block_size: int | Mapping[int, float], read_pct: float
) -> list[Ceiling]:
    """The ceiling of each protocol on this link (errors for a protocol that does not fit the link)."""
    return [ceiling(p, link_bps=link, mtu=mtu, block_size=block_size, read_pct=read_pct) for p in protocols]


def limits_table(
    protocols: list[str], link: str, mtu: int, block_size: int | Mapping[int, float], read_pct: float
) -> Table:
    """A rich table of frames and bytes per I/O in each direction and the link's ceiling, one row per protocol."""
    return _table(limits_rows(protocols, link, mtu, block_size, read_pct), link, block_size, read_pct)


def _table(rows: list[Ceiling], link: str, block_size: int | Mapping[int, float], read_pct: float) -> Table:
    table = Table(title=f"Wire ceilings on {parse_link(link).name}: {_describe(block_size, read_pct)}")
    for name in ("protocol", "link", "MTU"):
        table.add_column(name)
    for name in ("frames → storage", "frames → host", "frames/I/O range", "bytes → storage", "bytes → host",
                 "ceiling IOPS", "ceiling MB/s"):
        table.add_column(name, justify="right")
    table.add_column("bottleneck")
    table.add_column("note")
    for c in rows:
        w = c.wire_cost
        table.add_row(
            c.protocol, c.link, "—" if w.mtu is None else str(w.mtu),
            _count(w.frames_to_storage), _count(w.frames_to_host),
            f"{_count(w.frames_low)}–{_count(w.frames_high)}",
            _count(w.bytes_to_storage), _count(w.bytes_to_host),
            f"{c.iops:,.0f}", f"{c.mbps:,.1f}", c.bottleneck_direction,
            "modelled only" if c.modelled_only else "",
        )
    table.caption = (
        "Bytes are on the wire per I/O, all framing included (Ethernet preamble and gap, "
        "FC idles); MB/s is user data, 1 MB = 10^6 B. Frames are real frames, pure ACKs as Linux "
        "sends them; the range runs from no pure ACK to one per two segments (RFC 1122). Interface "
        "packet counts with segmentation offloads on are segments handed to the NIC, not frames."
    )
    if any(c.modelled_only for c in rows):
        table.caption += " FC and FCoE are modelled only: this lab cannot run them."
    return table


def _parse_block_size(text: str) -> int | dict[int, float]:
    """ "8k" -> 8192; "4k:3,64k:1" -> a weighted mix."""
    from protolab.plan.units import parse_size

    try:
        if ":" not in text and "," not in text:
            return parse_size(text.strip())
        mix: dict[int, float] = {}
        for part in text.split(","):
            size, _, weight = part.partition(":")
            mix[parse_size(size.strip())] = float(weight) if weight.strip() else 1.0
        return mix
    except ValueError as exc:
        raise ProtolabError(
            f"limits: --block-size {text!r} is not a size; write 8k, 64KiB, or a mix like 4k:3,64k:1 ({exc})"
        ) from None


def _resolve_workload(
    workload: Optional[str], block_size: Optional[str], read_pct: Optional[float]
) -> tuple[int | dict[int, float], float, str]:
    """Block size, read % and a label: from a built-in workload, overridden by explicit options."""
    size: int | dict[int, float] = DEFAULT_BLOCK_SIZE
    reads = DEFAULT_READ_PCT
    label = "default 8k reads"
    if workload is not None:
        from protolab.plan.library import BUILTIN_WORKLOADS

        if workload not in BUILTIN_WORKLOADS:
            raise ProtolabError(
                f"limits: unknown workload {workload!r}; choose one of {', '.join(sorted(BUILTIN_WORKLOADS))}, "
                "or give --block-size and --read-pct"
            )
        spec = BUILTIN_WORKLOADS[workload]
        size, reads, label = spec.block_size, float(spec.read_pct), f"workload {workload}"
    if block_size is not None:
        size = _parse_block_size(block_size)
        label = "given block size" if workload is None else f"workload {workload}, block size overridden"
    if read_pct is not None:
        if not 0.0 <= read_pct <= 100.0:
            raise ProtolabError(f"limits: --read-pct must be between 0 and 100, got {read_pct:g}")
        reads = float(read_pct)
    return size, reads, label


def run_limits(
    protocol: Optional[str],
    link: str,
    mtu: int,
    workload: Optional[str],
    block_size: Optional[str],
    read_pct: Optional[float],
    console: Console,
    as_json: bool = False,
) -> list[Ceiling]:
    """Resolve the workload, print the table of ceilings to `console`, and return the rows.

    Without --protocol every protocol that fits the link is shown: FC alone on an
    FC link; iSCSI, NFS, NBD and (when the MTU allows) FCoE on Ethernet.
    """
    resolved = parse_link(link)
    size, reads, label = _resolve_workload(workload, block_size, read_pct)
    notes = []
    if protocol is not None:
        chosen = protocol.strip().lower()
        if chosen not in PROTOCOLS:
            raise ProtolabError(f"limits: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        protocols = [chosen]
    elif resolved.kind == "fc":
        protocols = ["fc"]
    else:
        protocols = ["iscsi", "nfs", "nbd"]
        if mtu >= FCOE_MIN_MTU:
            protocols.append("fcoe")
        else:
            notes.append(f"FCoE is not shown: it needs an MTU of at least {FCOE_MIN_MTU}.")
    rows = limits_rows(protocols, link, mtu, size, reads)
    if as_json:
        import dataclasses
        import json

        doc = {"link": str(link), "mtu": mtu, "access_spec": _describe(size, reads), "notes": notes,
               "ceilings": [dataclasses.asdict(r) for r in rows]}
        print(json.dumps(doc, indent=2, default=str))
        return rows
    from ..report.terminal import print_table

    print_table(console, _table(rows, link, size, reads))
    console.print(" ".join([f"Access spec: {label} ({_describe(size, reads)})."] + notes))
    return rows


def limits_command(
    protocol: Optional[str] = typer.Option(
        None, "--protocol", "-p",
        help=f"One of {', '.join(PROTOCOLS)}; FC and FCoE are modelled only. Default: all that fit the link.",
    ),
    link: str = typer.Option(
        "1GbE", "--link", "-l",
        help=f"Link preset ({', '.join(LINKS)}) or an Ethernet rate such as 10gbit or 2.5G.",
    ),
    mtu: int = typer.Option(1500, "--mtu", help="Ethernet MTU in bytes (ignored for native FC)."),
    workload: Optional[str] = typer.Option(
        None, "--workload", "-w", help="A built-in workload, e.g. tr3808-8k; supplies block size and read %."
    ),
    block_size: Optional[str] = typer.Option(
        None, "--block-size", "-b",
        help="Block size such as 8k, or a mix like 4k:3,64k:1; overrides the workload's. Default 8k.",
    ),
    read_pct: Optional[float] = typer.Option(
        None, "--read-pct", help="Share of I/Os that read, 0-100; overrides the workload's. Default 100."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the ceilings as JSON (every field of the model)."),
) -> None:
    """Show the wire's ceiling in IOPS and MB/s for a protocol, link, MTU and workload."""
    from ..report.terminal import make_console

    run_limits(protocol, link, mtu, workload, block_size, read_pct, make_console(), as_json)
