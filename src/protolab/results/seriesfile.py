"""Reading series.csv back: a few windows' lines found fast, and its fields as their types (RunDir.series and
RunDir.intervals own the file; this is how they read it)."""

from __future__ import annotations

import re
from typing import Any, Iterator, NamedTuple

from ..conventions import digits


def number(key: str, v: str) -> Any:
    """A series.csv field as its type (csv gives text)."""
    if key in ("seq", "session", "ios"):
        return int(v)
    return v if key in ("cell_id", "phase", "host") else float(v)


#: Up to this many seqs, series.csv's lines that may be theirs are found by one regular expression per block of the
#: file (in C), not judged line by line in Python (0.9 s against 0.05 s for 42 seqs among 300,000 lines); the
#: expression tries each seq in turn, so many seqs go line by line.
FEW_SEQS = 64
BLOCK = 1 << 22  # characters read at a time


def lines_of(f: Any, seqs: set[int]) -> Iterator[str]:
    """The lines of series.csv (seq first; its header read) that may be one of ``seqs``: any line but one that starts
    with a plain number that is none of them (anything else is parsed and judged by the caller). Read in blocks of
    4 MiB: a long run's file is never held whole."""
    if len(seqs) > FEW_SEQS:
        for line in f:
            head = line[:line.find(",")]
            if not digits(head) or int(head) in seqs:
                yield line
        return
    # a newline, then one of the seqs (leading zeros too) and a comma, or anything but a plain number and a comma;
    # a literal newline to search for: "^" with re.M tries every position and is 5× slower
    wanted = re.compile("\n((?:0*(?:" + "|".join(str(s) for s in sorted(seqs)) + "),|(?![0-9]+,))[^\n]*)"
                        if seqs else "\n((?![0-9]+,)[^\n]*)")
    rest = ""
    while True:
        block = f.read(BLOCK)
        cut = None
        if block:
            block = "\n" + rest + block  # the block starts at a line's start
            cut = block.rfind("\n") + 1  # whole lines now; the torn tail waits for the next block
            rest = block[cut:]
        else:
            block = "\n" + rest
        yield from (line for line in wanted.findall(block, 0, cut or len(block)) if line)
        if cut is None:
            return


class Point(NamedTuple):
    """One per-interval value read back from series.csv (plain tuple: tens of thousands are read at once)."""

    seq: int
    host: str
    t_s: float
    iops: float
