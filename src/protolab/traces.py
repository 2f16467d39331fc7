"""Captured I/O traces a plan replays: fio iologs (version 2 and 3) and blktrace binaries, read and fitted.

A trace is read, never written: a regular file of at most MAX_TRACE_BYTES, opened once
without blocking and without following a link at its name, and (`user_trace`, at validate,
at run time and on resume) checked on that open file. Its reads and writes become events
(time in µs when the format has one, operation, offset, length); anything else a
trace holds (trims, syncs, notes) is counted and left out. `write_iolog` writes one
stream's copy as a fio version 3 iolog: the stream's file name, offsets folded into
the stream's region, gaps multiplied by the time scale — the I/O count and bytes are
the trace's own. fio 3.33 reads a version 3 iolog's times as microseconds (checked:
gaps of 400,000 between three reads took 800 ms).
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .conventions import digits

#: A replayed trace may be at most this large: it is read whole to check and fit it.
MAX_TRACE_BYTES = 64 * 1024**2
#: blktrace: struct blk_io_trace (48 bytes) then pdu_len bytes; magic 0x65617400 | version.
_BLK = struct.Struct("<IIQQIIIIIHH")
_BLK_BE = struct.Struct(">IIQQIIIIIHH")
_BLK_SIZE = 48
_BLK_MAGIC = 0x65617400
_BLK_TA_QUEUE = 1  # the event fio replays: a request queued by the file system
_BLK_TC_READ, _BLK_TC_WRITE, _BLK_TC_NOTIFY = 1 << 0, 1 << 1, 1 << 10
_IOLOG_ACTIONS = {"add", "open", "close", "read", "write", "sync", "datasync", "trim", "wait"}


class TraceError(ValueError):
    """A trace that cannot be replayed; the message says why and what to give instead."""


@dataclass(frozen=True)
class Event:
    """One replayed I/O."""

    t_us: int  # from the trace's first I/O; 0 for a version 2 iolog (no times)
    write: bool
    offset: int
    length: int


@dataclass(frozen=True)
class Trace:
    """A trace's reads and writes, in order, and what it held that is not replayed."""

    format: str  # iolog2 | iolog3 | blktrace
    events: tuple[Event, ...]
    left_out: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        """What a plan's workload shows of its trace: counts, bytes, mix, randomness, length in time."""
        ev = self.events
        reads = sum(1 for e in ev if not e.write)
        sizes: dict[int, int] = {}
        for e in ev:
            sizes[e.length] = sizes.get(e.length, 0) + 1
        sequential = sum(1 for a, b in zip(ev, ev[1:]) if b.offset == a.offset + a.length)
        return {"format": self.format, "ios": len(ev), "reads": reads, "writes": len(ev) - reads,
                "bytes": sum(e.length for e in ev), "read_bytes": sum(e.length for e in ev if not e.write),
                "sizes": dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
                "random_pct": round(100 * (1 - sequential / max(1, len(ev) - 1)), 1) if len(ev) > 1 else 100.0,
                "duration_s": (ev[-1].t_us - ev[0].t_us) / 1e6 if ev else 0.0,
                "span_bytes": max((e.offset + e.length for e in ev), default=0),
                "left_out": dict(self.left_out)}


def may_read(path: str | Path, plan_dir: Path | None, fd: int) -> None:
    """TraceError unless the person who ran protolab could read the trace open at ``fd`` (named ``path``)
    themselves: protolab reads a trace as root, and a plan must not make it read someone else's file (its errors
    and the run directory would show it).

    Through sudo, the kernel decides with sudo's user's own permissions (``setpriv`` to that user, ``test -r`` of
    the path and of the open file itself). For root itself, the trace must lie under the plan's own directory or
    be readable by everyone. Either way the path must still name the open file after the check."""
    from .trust import invoking_user

    if os.geteuid() != 0:
        return  # this process has the user's own permissions
    shown = str(path)
    uid, gid = invoking_user()
    real = os.path.realpath(path)
    if uid != 0:
        import pwd
        import subprocess

        try:
            groups = "--init-groups" if pwd.getpwuid(uid).pw_name else "--clear-groups"
        except KeyError:
            groups = "--clear-groups"
        as_them = ["setpriv", f"--reuid={uid}", f"--regid={gid}", groups]  # never root's own test
        # the path (its directories) and the file protolab opened (whatever the path names by now)
        ok = subprocess.run([*as_them, "sh", "-c", f'test -r "$1" && test -r /proc/self/fd/{fd}', "sh", real],
                            capture_output=True, timeout=30, pass_fds=(fd,)).returncode == 0
        if not ok:
            raise TraceError(f"{shown}: you (uid {uid}) cannot read it; protolab reads a trace only when the user "
                             "who runs it could")
    else:
        inside = False
        if plan_dir is not None:
            base = os.path.realpath(plan_dir)
            inside = os.path.commonpath([real, base]) == base
        readable = inside or (os.fstat(fd).st_mode & 0o004
                              and all(os.stat(d).st_mode & 0o001 for d in Path(real).parents))
        if not readable:
            raise TraceError(f"{shown}: not under the plan's directory and not readable by everyone; put the trace "
                             "beside the plan (protolab, as root, reads no one's private files for a plan)")
    if not _same(os.fstat(fd), real):
        raise TraceError(f"{shown}: changed while protolab checked it; give a trace no one else can replace")


def _same(st: os.stat_result, path: str) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def user_trace(path: str | Path, plan_dir: Path | None) -> Trace:
    """The trace at ``path`` as `read_trace` reads it, once `may_read` has passed on the file it opened: what
    validate, each window's replay and resume read, so a trace swapped after validate is checked again."""
    return _read(path, lambda fd: may_read(path, plan_dir, fd))


def read_trace(path: str | Path) -> Trace:
    """The trace at ``path``; TraceError when it is missing, a link, not a regular file, too large or not a trace."""
    return _read(path, None)


#: Parsed traces by file version (device, inode, change time, size): every warm-up and window of a study replays
#: the same trace, parsed once; each read still opens and checks the file.
_PARSED: dict[tuple[int, ...], Trace] = {}


def _read(path: str | Path, vet) -> Trace:
    shown = str(path)  # as the plan wrote it
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise TraceError(f"{shown}: no such file; give the path of a fio iolog or a blktrace") from None
    except OSError as e:
        raise TraceError(f"{shown}: cannot read it ({e.strerror or e})") from None
    if stat.S_ISLNK(st.st_mode):
        raise TraceError(f"{shown}: is a symlink; give the trace file itself (protolab follows no link to a trace)")
    if not stat.S_ISREG(st.st_mode):  # checked before any open: a FIFO or a device is never opened
        raise TraceError(f"{shown}: is not a regular file (a directory, FIFO, device or socket); give a trace file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise TraceError(f"{shown}: cannot read it ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{shown}: is not a regular file; give a trace file")
        if st.st_size > MAX_TRACE_BYTES:
            raise TraceError(f"{shown}: is {st.st_size:,} bytes, more than a trace's {MAX_TRACE_BYTES // 1024**2} "
                             "MiB; cut it shorter")
        if vet is not None:
            vet(fd)
        key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size)
        if key in _PARSED:
            return _PARSED[key]
        try:
            data = f.read(MAX_TRACE_BYTES + 1)
        except OSError as e:
            raise TraceError(f"{shown}: cannot read it ({e.strerror or e})") from None
    trace = _parsed(str(Path(path).absolute()), data)
    if len(_PARSED) >= 8:
        _PARSED.pop(next(iter(_PARSED)))
    _PARSED[key] = trace
    return trace


def _parsed(path: str, data: bytes) -> Trace:
    if len(data) > MAX_TRACE_BYTES:
        raise TraceError(f"{path}: is larger than a trace's {MAX_TRACE_BYTES // 1024**2} MiB; cut it shorter")
    if data.startswith(b"fio version 2 iolog") or data.startswith(b"fio version 3 iolog"):
        trace = _iolog(path, data)
    elif len(data) >= _BLK_SIZE and _blk_endian(data) is not None:
        trace = _blktrace(path, data)
    else:
        raise TraceError(f"{path}: is neither a fio iolog ('fio version 2 iolog' or 3) nor a blktrace; "
                         "capture one with fio's write_iolog or blktrace")
    if not trace.events:
        raise TraceError(f"{path}: holds no reads or writes to replay")
    return trace


def _iolog(path: str, data: bytes) -> Trace:
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise TraceError(f"{path}: an iolog is text, and this one is not UTF-8") from None
    version = 3 if lines[0].startswith("fio version 3") else 2
    events: list[Event] = []
    left: dict[str, int] = {}
    first: int | None = None
    for n, line in enumerate(lines[1:], 2):
        parts = line.split()
        if not parts:
            continue
        t = 0
        if version == 3:
            if not digits(parts[0]):
                raise TraceError(f"{path}:{n}: a version 3 iolog line starts with a time in µs")
            t, parts = int(parts[0]), parts[1:]
        if len(parts) < 2 or parts[1] not in _IOLOG_ACTIONS:
            raise TraceError(f"{path}:{n}: not an iolog line (FILE ACTION [OFFSET LENGTH])")
        action = parts[1]
        if action in ("read", "write"):
            if len(parts) != 4 or not digits(parts[2]) or not digits(parts[3]) or int(parts[3]) == 0:
                raise TraceError(f"{path}:{n}: a {action} needs an offset and a length in bytes")
            first = t if first is None else first
            events.append(Event(t - first, action == "write", int(parts[2]), int(parts[3])))
        elif action not in ("add", "open", "close"):
            left[action] = left.get(action, 0) + 1
    return Trace(f"iolog{version}", tuple(events), left)


def _blk_endian(data: bytes) -> struct.Struct | None:
    for s in (_BLK, _BLK_BE):
        if (s.unpack_from(data)[0] & 0xFFFFFF00) == _BLK_MAGIC:
            return s
    return None


def _blktrace(path: str, data: bytes) -> Trace:
    s = _blk_endian(data)
    assert s is not None
    events: list[Event] = []
    left: dict[str, int] = {}
    first: int | None = None
    pos = 0
    while pos + _BLK_SIZE <= len(data):
        magic, _seq, t_ns, sector, nbytes, action, _pid, _dev, _cpu, _err, pdu = s.unpack_from(data, pos)
        if (magic & 0xFFFFFF00) != _BLK_MAGIC:
            raise TraceError(f"{path}: byte {pos}: not a blktrace event (bad magic); the file is cut or not blktrace")
        pos += _BLK_SIZE + pdu
        kind, cat = action & 0xFFFF, action >> 16
        if cat & _BLK_TC_NOTIFY or kind != _BLK_TA_QUEUE:
            continue  # notes, and the later stages of a request already counted when it was queued
        if not cat & (_BLK_TC_READ | _BLK_TC_WRITE) or nbytes == 0:
            left["other"] = left.get("other", 0) + 1  # flushes, discards
            continue
        first = t_ns if first is None else first
        events.append(Event((t_ns - first) // 1000, bool(cat & _BLK_TC_WRITE), sector * 512, nbytes))
    if pos != len(data):
        raise TraceError(f"{path}: ends inside an event ({len(data) - pos} bytes left); the file is cut")
    return Trace("blktrace", tuple(events), left)


def fold(offset: int, length: int, region: int, align: int = 4096) -> int:
    """``offset`` moved into [0, region): unchanged when the I/O fits, else wrapped (and, at the end, moved
    back to the last aligned place it fits), so that the I/O stays whole."""
    if offset + length <= region:
        return offset
    o = offset % region
    if o + length > region:
        o = (region - length) // align * align
    return o


def write_iolog(trace: Trace, path: Path, filename: str, *, offset: int, size: int, time_scale: float) -> None:
    """One stream's replay: ``trace`` as a fio v3 iolog on ``filename``, within [offset, offset + size)."""
    lines = ["fio version 3 iolog", f"0 {filename} add", f"0 {filename} open"]
    last = 0
    for e in trace.events:
        if e.length > size:
            raise TraceError(f"an I/O of {e.length} bytes is larger than the stream's region of {size} bytes; "
                             "raise the target's size or lower the streams")
        last = round(e.t_us * time_scale)
        lines.append(f"{last} {filename} {'write' if e.write else 'read'} "
                     f"{offset + fold(e.offset, e.length, size)} {e.length}")
    lines.append(f"{last} {filename} close")
    path.write_text("\n".join(lines) + "\n")
