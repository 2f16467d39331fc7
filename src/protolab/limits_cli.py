"""`protolab limits`: the wire model's ceilings (analysis.limits) printed as a table, or as JSON.

No `from __future__ import annotations` here: typer reads the annotations of
`limits_command` at registration time.
"""

from collections.abc import Mapping
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .analysis.limits import choose_protocols, describe_access, limits_rows, resolve_workload, workload_oio
from .analysis.wire import LINKS, Ceiling, modelled_only, parse_link
from .plan.protocols import PROTOCOLS as REGISTRY
from .plan.protocols import modelled


def limits_table(
    protocols: list[str], link: str, mtu: int, block_size: int | Mapping[int, float], read_pct: float, oio: int = 1
) -> Table:
    """A rich table of frames and bytes per I/O in each direction and the link's ceiling, one row per protocol."""
    return _table(limits_rows(protocols, link, mtu, block_size, read_pct, oio), link, block_size, read_pct, oio)


def _table(rows: list[Ceiling], link: str, block_size: int | Mapping[int, float], read_pct: float,
           oio: int = 1) -> Table:
    table = Table(title=f"Wire ceilings on {parse_link(link).name}: {describe_access(block_size, read_pct)}, "
                        f"OIO {oio}")
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
        "sent them on the lab (one per burst of two or more segments with one I/O in flight; fewer, riding on "
        "requests, with more); the range runs from no pure ACK to one per two segments (RFC 1122). Interface "
        "packet counts with segmentation offloads on are segments handed to the NIC, not frames."
    )
    if any(c.modelled_only for c in rows):
        only = _titles(modelled_only())
        table.caption += f" {only} are modelled only: this lab cannot run them."
    return table


def _count(x: float) -> str:
    """Frames and bytes: whole numbers plainly, expectations of mixes with two decimals."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else f"{x:,.2f}"


def _titles(protocols: list[str]) -> str:
    """'A, B and C' of the protocols' titles."""
    titles = [REGISTRY[p].title for p in protocols]
    return ", ".join(titles[:-1]) + " and " + titles[-1] if len(titles) > 1 else "".join(titles)


def run_limits(
    protocol: Optional[str],
    link: str,
    mtu: int,
    workload: Optional[str],
    block_size: Optional[str],
    read_pct: Optional[float],
    console: Console,
    as_json: bool = False,
    oio: Optional[int] = None,
) -> list[Ceiling]:
    """Resolve the workload, print the table of ceilings to `console`, and return the rows.

    Without --protocol every protocol that fits the link is shown: FC alone on an
    FC link; iSCSI, NFS, NBD and (when the MTU allows) FCoE on Ethernet.
    """
    parse_link(link)  # an unknown link is refused before anything else
    size, reads, label = resolve_workload(workload, block_size, read_pct)
    in_flight = workload_oio(workload, oio)
    protocols, notes = choose_protocols(protocol, link, mtu)
    rows = limits_rows(protocols, link, mtu, size, reads, in_flight)
    if as_json:
        import dataclasses
        import json

        doc = {"link": str(link), "mtu": mtu, "access_spec": describe_access(size, reads), "oio": in_flight,
               "notes": notes,
               "ceilings": [dataclasses.asdict(r) for r in rows]}
        print(json.dumps(doc, indent=2, default=str))
        return rows
    from .report.terminal import print_table

    print_table(console, _table(rows, link, size, reads, in_flight))
    console.print(" ".join([f"Access spec: {label} ({describe_access(size, reads)}), {in_flight} I/O"
                            f"{'s' if in_flight > 1 else ''} in flight per connection (OIO)."] + notes))
    return rows


def limits_command(
    protocol: Optional[str] = typer.Option(
        None, "--protocol", "-p",
        help=f"One of {', '.join(modelled())}; {_titles(modelled_only())} are "
        "modelled only. Default: all that fit the link.",
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
    oio: Optional[int] = typer.Option(
        None, "--oio", help="I/Os in flight per connection (Linux's pure ACKs depend on it). Default: the "
        "workload's, else 1."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the ceilings as JSON (every field of the model)."),
) -> None:
    """Show the wire's ceiling in IOPS and MB/s for a protocol, link, MTU and workload."""
    from .report.terminal import make_console

    run_limits(protocol, link, mtu, workload, block_size, read_pct, make_console(), as_json, oio)
