"""Latency over time as a distribution: fio's histogram log entries binned into time steps × a log-spaced grid of
latency rows (results.heatmapfile), and heatmaps of repeats added.

Each entry counts the completions of the ``step_ms`` before its time (fio logs it at the first completion after
the step elapsed): its counts are spread over the window's columns that span overlaps, so an entry a few ms late
still lands where its completions were. An entry after a stall (no completion for longer than a step) holds the
completions that ended it, at its own time: they are not spread over the stall. Times are each job's own (since it
started): the window starts at the warm-up's length ``t0_ms`` in them (as engine.faultlog places its logs).
fio's bins are at most 1/16 of a latency wide (coarseness 2) and each goes whole to the row its middle falls in.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..results.heatmapfile import Heatmap, row_of


def row_map(edges_ns: Sequence[tuple[int, int]]) -> list[int]:
    """Each of fio's logged bins → its grid row (by its middle)."""
    return [row_of((low + high) / 2000.0) for low, high in edges_ns]


def bin_window(jobs: Iterable[Sequence[tuple[int, int, Sequence[int]]]], edges_ns: Sequence[tuple[int, int]], *,
               t0_ms: float, window_ms: float, step_ms: int) -> Heatmap:
    """Every job's entries (time ms, direction, counts) of one window added into one heatmap."""
    rows = row_map(edges_ns)
    n = max(1, int(round(window_ms / step_ms)))
    grid: dict[int, list[float]] = {}  # row → per column
    njobs = 0
    for entries in jobs:
        njobs += 1
        for t, _direction, counts in entries:
            per_row: dict[int, int] = {}
            for i, c in enumerate(counts):
                if c:
                    per_row[rows[i]] = per_row.get(rows[i], 0) + c
            if not per_row:
                continue
            end = t - t0_ms
            start = end - step_ms
            first, last = int(start // step_ms), int(end // step_ms)
            for k in range(max(0, first), min(n - 1, last) + 1):
                share = (min(end, (k + 1) * step_ms) - max(start, k * step_ms)) / step_ms
                if share <= 0:
                    continue
                for r, c in per_row.items():
                    grid.setdefault(r, [0.0] * n)[k] += c * share
    if not grid:
        return Heatmap(step_ms, window_ms, 0, tuple(() for _ in range(n)), njobs)
    row0, top = min(grid), max(grid)
    cols = tuple(tuple(int(round(grid.get(r, [0.0] * n)[k])) for r in range(row0, top + 1)) for k in range(n))
    return Heatmap(step_ms, window_ms, row0, cols, njobs)


def added(maps: Sequence[Heatmap]) -> Heatmap | None:
    """Heatmaps of one cell's repeats added column by column (their windows aligned at the start; the longest
    window and the lowest row kept); None without any, or when their steps differ."""
    if not maps or len({m.step_ms for m in maps}) != 1:
        return None
    row0 = min(m.row0 for m in maps if m.total()) if any(m.total() for m in maps) else 0
    top = max((m.row0 + m.rows - 1 for m in maps if m.total()), default=row0)
    n = max(len(m.counts) for m in maps)
    out = [[0] * (top - row0 + 1) for _ in range(n)]
    for m in maps:
        for k, col in enumerate(m.counts):
            for i, c in enumerate(col):
                if c:
                    out[k][m.row0 + i - row0] += c
    return Heatmap(maps[0].step_ms, max(m.window_ms for m in maps), row0, tuple(tuple(c) for c in out),
                   sum(m.jobs for m in maps))



def coarser(hm: Heatmap, factor: int) -> Heatmap:
    """Every ``factor`` neighbouring steps added into one (a longer step)."""
    if factor <= 1:
        return hm
    cols = []
    for k in range(0, len(hm.counts), factor):
        group = hm.counts[k:k + factor]
        width = max((len(c) for c in group), default=0)
        cols.append(tuple(sum(c[i] for c in group if i < len(c)) for i in range(width)))
    return Heatmap(hm.step_ms * factor, hm.window_ms, hm.row0, tuple(cols), hm.jobs)
