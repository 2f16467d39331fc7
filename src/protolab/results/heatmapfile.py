"""A measured window's latency heatmap as the run directory keeps it: completions per time step × latency row.

Rows are a log-spaced grid of completion latency, ``PER_DECADE`` rows per decade from 1 µs (row k holds latencies
in [10^(k/PER_DECADE), 10^((k+1)/PER_DECADE)) µs; row 0 also holds everything below 1 µs); only the rows from
``row0`` to the highest one with a count are kept. Columns are ``step_ms`` of the measured window each, from its
start. Made from fio's histogram logs (engine.histlog, analysis.heatmap); one JSON file per window,
``heatmap/<cell id>.json``, a few KiB where fio's logs were hundreds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..safepath import inside
from .files import atomic_write

#: Rows per decade of latency (each row 33 % wider than the one below).
PER_DECADE = 8
#: What a stored heatmap may hold: latency rows (10^(80/8) µs = 10,000 s) and steps (an aging of many windows).
MOST_ROWS = 80
MOST_COLUMNS = 100_000
MOST_BYTES = 16 * 2**20
#: The folder of the run directory that holds them.
FOLDER = "heatmap"


def row_of(latency_us: float) -> int:
    """The grid row of a latency (µs)."""
    if latency_us < 1.0:
        return 0
    return int(math.floor(PER_DECADE * math.log10(latency_us) + 1e-9))


def edge_us(row: int) -> float:
    """The lower edge of a grid row (µs); row 0's is 0."""
    return 0.0 if row <= 0 else 10 ** (row / PER_DECADE)


@dataclass(frozen=True)
class Heatmap:
    """Completions per column (``step_ms`` of the window each) and latency row (``row0`` upwards)."""

    step_ms: int
    window_ms: float
    row0: int
    counts: tuple[tuple[int, ...], ...]  # per column, per row from row0
    jobs: int = 0

    @property
    def rows(self) -> int:
        """How many latency rows it keeps."""
        return max((len(c) for c in self.counts), default=0)

    def edges_us(self) -> list[float]:
        """The kept rows' edges, lowest first (rows + 1 values)."""
        return [edge_us(self.row0 + i) for i in range(self.rows + 1)]

    def total(self) -> int:
        """Every completion it counts."""
        return sum(sum(c) for c in self.counts)

    def to_dict(self) -> dict:
        """Its JSON form (trailing zero rows dropped per column)."""
        return {"step_ms": self.step_ms, "window_ms": round(self.window_ms, 3), "row0": self.row0,
                "per_decade": PER_DECADE, "jobs": self.jobs, "counts": [_trim(c) for c in self.counts]}

    @classmethod
    def from_dict(cls, d: dict) -> "Heatmap":
        """Read back what `to_dict` wrote; ValueError when it is not that."""
        if not isinstance(d, dict) or d.get("per_decade") != PER_DECADE:
            raise ValueError("not a heatmap of this grid")
        counts = d.get("counts")
        if not isinstance(counts, list) or not all(isinstance(c, list) for c in counts):
            raise ValueError("heatmap counts are not a list of columns")
        cols = tuple(tuple(int(v) for v in c) for c in counts)
        if any(v < 0 for c in cols for v in c):
            raise ValueError("negative count in a heatmap")
        step, window, row0 = int(d["step_ms"]), float(d["window_ms"]), int(d["row0"])
        # fio's bins end at 2^34 ns (17 s: row 57); a window has at most engine.histlog's 300 steps (a run directory
        # is not trusted: its numbers must not make the report allocate or overflow)
        if not (0 <= row0 and row0 + max((len(c) for c in cols), default=0) <= MOST_ROWS and step > 0
                and len(cols) <= MOST_COLUMNS and 0 <= window <= step * MOST_COLUMNS):
            raise ValueError("heatmap out of range")
        return cls(step, window, row0, cols, int(d.get("jobs", 0)))


def _trim(col: tuple[int, ...]) -> list[int]:
    out = list(col)
    while out and out[-1] == 0:
        out.pop()
    return out


def heatmap_path(run: Path, cell_id: str) -> Path:
    """Where a window's heatmap is kept."""
    return inside(Path(run), FOLDER, f"{cell_id}.json")


def write_heatmap(run: Path, cell_id: str, heatmap: Heatmap) -> Path:
    """Keep a window's heatmap in the run directory (atomically); its path."""
    path = heatmap_path(run, cell_id)
    atomic_write(path, json.dumps(heatmap.to_dict(), separators=(",", ":")))
    return path


def read_heatmaps(run: Path, cell_ids: list[str]) -> dict[str, Heatmap]:
    """The heatmaps kept for these windows (a window without one, or with an unreadable one, is left out: a run
    directory is not trusted; a link is not followed)."""
    out = {}
    for cid in cell_ids:
        try:
            path = heatmap_path(run, cid)
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MOST_BYTES:
                continue
            out[cid] = Heatmap.from_dict(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError, OSError):
            continue
    return out
