"""Data verification with fio (plan.verify): the read-back of every block of a cell's regions after its window, and
the blocks fio found bad.

Every write of a verified plan carries fio's verify header every ``interval`` bytes: the chunk's own offset, and a
checksum of its bytes (fio's HOWTO, "Verification"; verify.c; the options: engine.jobfile's ``header_options`` and
``write_options``). The prepare and the fill write them (no read pass); a window's writes do too, and fio reads
each block back soon after writing it (``verify_backlog``). Those read-backs are I/Os of the window: fio counts
them among its reads (fio 3.33: a 100 % random-write run of 550,791 writes also did 479,488 reads). After the
window, a read job over each stream's region checks every chunk in it — what the window wrote and what the
prepare wrote before — by its header alone: a job that only reads takes each header's seed as given (verify.c,
verify_io_u) and checks the offset, the header's CRC and the checksum. Not fio's ``verify_only``, which replays
a job's own writes and refuses a time-based job (its HOWTO).

A failed check is counted and the job goes on (``continue_on_error=verify``; ``verify_fatal=0`` checks the rest of
the block); fio prints one line per bad chunk ("crc32c: verify failed at file F offset O, length L …", "verify:
bad magic header … at file F offset O, length L …") and, in its JSON, ``total_err`` and ``error`` 84 (EILSEQ).
The read-back reads one chunk per I/O, so that every bad chunk has its line: fio stops checking an I/O's further
chunks at the first bad header. ``verify_state_save=0``: fio would otherwise write a state file into its working
directory when a job ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..plan.verify import Verification
from ..safepath import inside
from ..trust import make_dir
from .fio import FAILED_CHECK
from .jobfile import Stream, _section
from .parse import error_words

if TYPE_CHECKING:
    from ..plan.expand import Cell
    from .fio import Fio
    from .measure import HostRun

#: Outstanding reads per stream of the read-back (engines that queue; psync reads one at a time).
READBACK_OIO = 16
_AT = re.compile(r" at file (?P<file>.+?) offset (?P<offset>\d+), length (?P<length>\d+)")


@dataclass(frozen=True)
class Mismatch:
    """A chunk that failed its check: where, how long, and the file (or URL) fio read it through."""

    offset: int
    length: int
    file: str


def mismatches(lines: list[str] | str) -> list[Mismatch]:
    """The bad chunks fio's lines name, each once (by offset), in the order fio printed them."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    out: dict[int, Mismatch] = {}
    for line in lines:
        if not FAILED_CHECK.search(line):
            continue
        m = _AT.search(line)
        if m is not None:
            off = int(m["offset"])
            out.setdefault(off, Mismatch(off, int(m["length"]), m["file"]))
    return list(out.values())


def failed_lines(text: str) -> list[str]:
    """fio's lines in ``text`` that report a failed check (a client run's output file holds its servers' lines)."""
    return [ln for ln in text.splitlines() if FAILED_CHECK.search(ln)]


def render_readback(cell: Cell, streams: list[Stream], v: Verification) -> str:
    """A job file reading every chunk of each stream's region once, sequentially, checking each."""
    glob = {"rw": "read", "bs": str(v.interval), "iodepth": str(READBACK_OIO), "verify": v.algorithm,
            "verify_interval": str(v.interval), "verify_fatal": "0", "continue_on_error": "verify",
            "verify_state_save": "0"}
    lines = [f"# protolab: read back every block of cell {cell.id}".replace("\n", " "), *_section("global", glob)]
    for st in streams:
        a = st.access
        opts = {"ioengine": a.ioengine, **a.options}
        if a.filename:
            opts["filename"] = a.filename
        opts |= {"offset": str(st.offset), "size": str(st.size)}
        lines += _section(f"readback-{st.index}", opts)
    return "\n".join(lines)


@dataclass
class ReadBack:
    """What the read-back checked: bytes read and checked, the bad chunks, and errors that were not checks."""

    verified_bytes: int
    bad: list[Mismatch] = field(default_factory=list)  # each bad chunk fio named
    counted: int = 0  # failed checks: fio's count (total_err), or the chunks it named if more
    errors: list[str] = field(default_factory=list)  # a job that failed for another reason (an I/O error)
    output: Path | None = None


def read_back(fio: Fio, cell: Cell, hosts: list[HostRun], v: Verification, *, folder: Path, label: str,
              socket_dir: Path | None = None) -> ReadBack:
    """Read every chunk of ``cell``'s streams' regions back through the hosts that wrote them, and check it."""

    from .measure import client_plan
    from .parse import job_entries, load_json, went_on_past_mismatches

    make_dir(folder)
    name = f"{cell.id}.readback"
    output = inside(folder, f"{name}.json")
    jobs = []
    for h in hosts:
        job = inside(folder, f"{name}.{h.name}.fio")
        job.write_text(render_readback(cell, h.streams, v))
        jobs.append(job)
    total = sum(s.size for h in hosts for s in h.streams)
    timeout = 120.0 + total / 1e6  # at least 1 MB/s
    if len(hosts) == 1 and hosts[0].agent is None:
        fio.run_job(jobs[0], output, netns=hosts[0].netns, timeout=timeout, label=label)
    else:
        clients, netns = client_plan(hosts, jobs)
        fio.run_clients(clients, output, cwd=socket_dir, timeout=timeout, label=label,
                        **({"netns": netns} if netns else {}))
    text = output.read_text()
    entries = job_entries(load_json(text, source=str(output)))
    errors = [f"{j.get('jobname', '?')}: {error_words(j['error'])}" for j in entries
              if int(j.get("error", 0)) and not went_on_past_mismatches(j)]
    checked = sum(int(j.get("read", {}).get("io_bytes", 0)) for j in entries)
    bad = mismatches([*getattr(fio, "verify_lines", []), *failed_lines(text)])
    told = sum(int(j.get("total_err", 0)) for j in entries)  # one per I/O, and an I/O is one chunk
    return ReadBack(checked, bad, max(told, len(bad)), errors, output)
