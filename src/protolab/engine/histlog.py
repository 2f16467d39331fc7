"""fio's completion latency histogram logs (``write_hist_log``, ``log_hist_msec``, ``log_hist_coarseness``): the job
file's options and the file format.

fio keeps each job's completion latencies in 1,856 bins (stat.h: FIO_IO_U_PLAT_BITS 6, 29 groups of 64; ns). Every
``log_hist_msec`` (at the first completion after it) it logs the bins' counts since the previous entry, as a line
``time_ms, direction, block size, count, count, …`` — the time since the job started; with coarseness c, each
logged count is the sum of 2^c neighbouring bins (iolog.c, flush_hist_samples; 464 counts at c = 2). Bin i < 128
holds latency i ns; above, group g = i // 64 - 1 holds [2^(g+6) + (i % 64)·2^g, … + 2^g) ns (stat.c,
plat_idx_to_val, which gives the middle). tools/hist/fio-histo-log-pctiles.py reads them the same way.

In a client run each server's logs come back to the client named ``PREFIX_clat_hist.N.log.<server>`` (an agent's
socket file name), each line with its interval's own counts only with protolab's fio patch 0005 (fio 3.33's server
sent t(k) = c(k) - t(k-1)); a direct run writes ``PREFIX_clat_hist.N.log``.
"""

from __future__ import annotations

from pathlib import Path

from .faultlog import job_logs

BITS = 6
GROUPS = 29
BINS = GROUPS << BITS  # 1,856
#: 4 bins per logged count: at most 1/16 of a latency wide, finer than the heatmap's rows (analysis.heatmap).
COARSENESS = 2
#: The finest step of a heatmap, and how many steps a window has at most (each is a 15 KiB copy of fio's bins in
#: the job's memory until the job ends).
MIN_STEP_MS = 100
MOST_STEPS = 300


def step_ms(window_s: float) -> int:
    """fio's log_hist_msec for a measured window: 100 ms, or a whole multiple of it that gives at most
    ``MOST_STEPS`` steps."""
    want = window_s * 1000.0 / MOST_STEPS
    return int(max(1, -(-want // MIN_STEP_MS))) * MIN_STEP_MS


def hist_options(prefix: str, msec: int) -> dict[str, str]:
    """The job file's options for histogram logs under ``prefix`` (an absolute path in the run directory)."""
    return {"write_hist_log": prefix, "log_hist_msec": str(msec), "log_hist_coarseness": str(COARSENESS)}


def bin_edges_ns(coarseness: int = COARSENESS) -> list[tuple[int, int]]:
    """Each logged count's latency range [low, high) in ns."""
    def low(i: int) -> int:
        if i < 2 << BITS:
            return i
        g = (i >> BITS) - 1
        return (1 << (g + BITS)) + (i % (1 << BITS)) * (1 << g)

    def high(i: int) -> int:
        if i < 2 << BITS:
            return i + 1
        g = (i >> BITS) - 1
        return low(i) + (1 << g)

    stride = 1 << coarseness
    return [(low(j), high(j + stride - 1)) for j in range(0, BINS, stride)]


Entry = tuple[int, int, list[int]]  # (time ms since the job started, direction, counts)


def parse_hist_log(text: str, bins: int = BINS >> COARSENESS) -> list[Entry]:
    """A histogram log's lines → (time ms, direction 0 read / 1 write / 2 trim, counts); a line without ``bins``
    whole counts (fio stopped mid-line, or another coarseness) is skipped."""
    out = []
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) != bins + 3:
            continue
        try:
            values = [int(p) for p in parts]
        except ValueError:
            continue
        if min(values) < 0:
            continue
        out.append((values[0], values[1], values[3:]))
    return out


def read_hist_logs(prefix: Path) -> list[list[Entry]]:
    """Every job's histogram log under ``prefix`` (every server's, in a client run)."""
    return [parse_hist_log(p.read_text(errors="replace")) for p in job_logs(prefix, "clat_hist")]
