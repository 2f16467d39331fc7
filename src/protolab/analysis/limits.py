"""The wire model's ceilings for a protocol, link, MTU and workload: the data behind `protolab limits`
(the command and its table are protolab.limits_cli)."""

from collections.abc import Mapping
from typing import Optional

from protolab.errors import ProtolabError

from ..plan.protocols import PROTOCOLS as REGISTRY
from ..plan.protocols import modelled
from .wire import Ceiling, ceiling, parse_link

DEFAULT_BLOCK_SIZE = 8192
DEFAULT_READ_PCT = 100.0


def _format_size(n: int) -> str:
    for unit, p in (("G", 3), ("M", 2), ("k", 1)):
        if n % 1024**p == 0:
            return f"{n // 1024**p}{unit}"
    return str(n)


def describe_access(block_size: int | Mapping[int, float], read_pct: float) -> str:
    """The access spec in words, as the table's title and the JSON's `access_spec` give it: '8k, 100 % read',
    '4k:3/64k:1, 70 % read'."""
    if isinstance(block_size, Mapping):
        bs = "/".join(f"{_format_size(s)}:{w:g}" for s, w in block_size.items())
    else:
        bs = _format_size(int(block_size))
    return f"{bs}, {read_pct:g} % read"


def limits_rows(
    protocols: list[str], link: str, mtu: int, block_size: int | Mapping[int, float], read_pct: float, oio: int = 1
) -> list[Ceiling]:
    """The ceiling of each protocol on this link (errors for a protocol that does not fit the link), with ``oio``
    I/Os in flight per connection (Linux's pure ACKs depend on it)."""
    return [ceiling(p, link_bps=link, mtu=mtu, block_size=block_size, read_pct=read_pct, oio=oio) for p in protocols]


def workload_oio(workload: Optional[str], oio: Optional[int]) -> int:
    """`protolab limits`' I/Os in flight per connection: --oio, else the built-in workload's, else 1."""
    if oio is not None:
        if oio < 1:
            raise ProtolabError(f"limits: --oio must be at least 1, got {oio}")
        return oio
    if workload is None:
        return 1
    from protolab.plan.library import BUILTIN_WORKLOADS

    return int(BUILTIN_WORKLOADS[workload].oio) if workload in BUILTIN_WORKLOADS else 1


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


def resolve_workload(
    workload: Optional[str], block_size: Optional[str], read_pct: Optional[float]
) -> tuple[int | dict[int, float], float, str]:
    """Block size, read % and a label ('workload tr3808-8k') of `protolab limits`' options: a built-in workload's,
    overridden by --block-size and --read-pct, else 8k reads; an unknown workload or a bad value is a
    ProtolabError naming the option."""
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


def default_protocols(link: str, mtu: int) -> tuple[list[str], list[str]]:
    """The protocols that fit the link (FC alone on an FC link; on Ethernet every other modelled protocol whose
    minimum MTU the link has), and a note for each left out."""
    fc_link = parse_link(link).kind == "fc"
    chosen, notes = [], []
    for p in modelled():
        proto = REGISTRY[p]
        if proto.fc_link != fc_link:
            continue
        if proto.min_mtu is not None and mtu < proto.min_mtu:
            notes.append(f"{proto.title} is not shown: it needs an MTU of at least {proto.min_mtu}.")
            continue
        chosen.append(p)
    return chosen, notes


def choose_protocols(protocol: Optional[str], link: str, mtu: int) -> tuple[list[str], list[str]]:
    """The protocol asked for, or `default_protocols`; an unknown name is an error naming the known ones."""
    if protocol is None:
        return default_protocols(link, mtu)
    chosen = protocol.strip().lower()
    if chosen not in modelled():
        raise ProtolabError(f"limits: unknown protocol {protocol!r}; choose one of {', '.join(modelled())}")
    return [chosen], []
