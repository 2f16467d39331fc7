"""`[method] verify`: every block protolab writes carries a checksum, and is read back and checked after each window.

    [method]
    verify = "crc32c"          # or "md5", "sha256"; default: no verification

protolab drives fio's own verification (engine.readback): every write of the data — the prepare or the fill, and
each window's writes — carries fio's verify header (the block's offset and a checksum of its bytes) every
`interval` bytes; during a window fio reads back each block it wrote soon after writing it (verify_backlog), and
after the window a read pass over each stream's region checks every block of it. A mismatch is counted, with its
offset, and the run goes on. A plan cannot set fio's verify options itself (plan.safety).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Any, Literal, get_args

from pydantic import Field, model_serializer

from .workload import _Model

#: The checksums a plan may ask for: fio's verify=… names (its HOWTO, "Verification").
Algorithm = Literal["crc32c", "md5", "sha256"]
ALGORITHMS = get_args(Algorithm)


class WithVerify(_Model):
    """The part of [method] that asks for verification (plan.model's Method is one)."""

    verify: Algorithm | None = Field(
        default=None, description="checksum every block written (crc32c, md5 or sha256) and read every block of "
        "each window's regions back after it: verified bytes and mismatches per window (plan.verify)")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # unverified, a method as before verify existed: no format bump
        out = handler(self)
        return {k: v for k, v in out.items() if k != "verify" or v is not None}


@dataclass(frozen=True)
class Verification:
    """How a plan's data is checked: fio's checksum and the bytes each checksummed header covers."""

    algorithm: str
    interval: int  # bytes per verify header: every write of the plan is a whole number of them, at their offsets

    def summary(self) -> str:
        """'crc32c per 4k': the checksum and the bytes each covers."""
        from .units import format_size

        return f"{self.algorithm} per {format_size(self.interval)}"


def written_sizes(plan: Any, initialise: Any = None) -> list[int]:
    """Every size protolab writes the plan's data in: its workloads that write (and ``initialise``, the built-in
    workload its method.initialise names, if that writes), the prepare's 1 MiB and the fill's block size."""
    workloads = [*plan.workloads, *([initialise] if initialise is not None else [])]
    sizes = [s for w in workloads if w.read_pct < 100 for s in w.sizes()]
    fill = plan.fill
    return [*sizes, 1024**2, *([fill.block_size] if fill is not None else [])]


def verification(plan: Any, initialise: Any = None) -> Verification | None:
    """The plan's verification, or None when it asks for none: the interval is the largest size every write
    divides into (``initialise``: as `written_sizes`), so that a block written at any size and offset is a whole
    number of checksummed chunks."""
    algorithm = plan.method.verify
    if algorithm is None:
        return None
    interval = 0
    for size in written_sizes(plan, initialise):
        interval = gcd(interval, size)
    return Verification(algorithm, interval)


def check_verify(plan: Any) -> str | None:
    """Why ``plan``'s method.verify cannot run (one line naming the field), or None."""
    if plan.method.verify is None:
        return None
    writers = [w.name for w in plan.workloads if w.read_pct < 100]
    if not writers:
        return ("method.verify: no workload of the plan writes (every read_pct is 100), so there is nothing to "
                "verify; remove verify or add a workload that writes")
    replayed = [w.name for w in plan.workloads if w.replay is not None and w.read_pct < 100]
    if replayed:
        return (f"method.verify: workload {replayed[0]} replays a trace, whose writes fall at the trace's own "
                "offsets and sizes, not on checksummed blocks; remove verify or the replay")
    if not plan.method.prepare and plan.fill is None:
        return ("method.verify needs every block of the data written with its checksum before the first cell: set "
                "method.prepare = true (or a [stage.fill])")
    return None  # every size is a multiple of 512 (plan.workload): an interval holds fio's largest header, 104 B
