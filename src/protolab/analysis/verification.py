"""What method.verify found, per configuration (plan.verify, engine.readback): the bytes read back and checked
after its windows, the chunks that failed a check and the first bad offset. Pure: records in, sentences out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..results.records import CellRecord


@dataclass(frozen=True)
class ConfigurationVerified:
    """One configuration's verified windows, summed."""

    configuration: str
    algorithm: str
    windows: int  # windows whose regions were read back and checked
    verified_bytes: int
    mismatches: int  # failed chunks, during the windows (fio's read-backs) or after them
    during_window: int  # … of them found while a window ran
    first_bad_offset: int | None = None  # the lowest, in bytes of the target; None: clean
    first_bad_cell: str = ""  # the window it was found in
    errors: list[str] = field(default_factory=list)  # read-back jobs that failed for another reason

    @property
    def verified_mib(self) -> float:
        return self.verified_bytes / 2**20

    def sentence(self) -> str:
        """'nbd: 1,536 MiB verified (crc32c, 6 windows), 0 mismatches' or '…, 2 mismatches, the first bad offset
        1,060,864 (cell …)'."""
        head = (f"{self.configuration}: {self.verified_mib:,.0f} MiB verified ({self.algorithm}, {self.windows} "
                f"window{'s' if self.windows != 1 else ''}), {self.mismatches:,} mismatch"
                f"{'es' if self.mismatches != 1 else ''}")
        if self.mismatches and self.first_bad_offset is not None:
            during = f"; {self.during_window:,} found during a window" if self.during_window else ""
            head += f", the first bad offset {self.first_bad_offset:,} (cell {self.first_bad_cell}){during}"
        elif self.mismatches:
            head += " (fio named no offset)"
        if self.errors:
            head += f"; the read-back failed: {self.errors[0]}"
        return head


def verified_by_configuration(records: Iterable[CellRecord], order: list[str]) -> list[ConfigurationVerified]:
    """Each configuration with verified windows, in ``order`` (the plan's), its windows summed."""
    by: dict[str, list[CellRecord]] = {}
    for r in records:
        if r.verification is not None:
            by.setdefault(r.configuration, []).append(r)
    out = []
    for name in [*order, *sorted(set(by) - set(order))]:
        recs = by.get(name)
        if not recs:
            continue
        bad = [(r.verification.first_bad_offset, r.cell_id) for r in recs
               if r.verification is not None and r.verification.first_bad_offset is not None]
        first = min(bad) if bad else (None, "")
        vs = [r.verification for r in recs if r.verification is not None]
        out.append(ConfigurationVerified(
            configuration=name, algorithm=vs[0].algorithm, windows=len(vs),
            verified_bytes=sum(v.verified_bytes for v in vs), mismatches=sum(v.mismatches for v in vs),
            during_window=sum(v.during_window for v in vs), first_bad_offset=first[0], first_bad_cell=first[1],
            errors=[e for v in vs for e in v.errors]))
    return out
