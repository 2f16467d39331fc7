"""The catalogue database, RESULTS/catalogue.sqlite: one row per run directory under the results root (plan name,
start, status, environment fingerprint) and the values history draws (one per metric, cell and repeat).

The run directories stay the truth. Each use scans the results root (never following a symlink: a linked run
directory is skipped, and so is one holding a link, as `RunDir.open` refuses it) and compares each run's stamps
(mtime, size and inode of manifest.json and records.jsonl) with the database's: a new run is added, a changed one
read again, a vanished one dropped. A missing, damaged or foreign database (not SQLite, another schema, a symlink)
is rebuilt from the run directories, never trusted.

The database is read into memory from a file opened without following a link (sqlite3 ``deserialize``) and, when
anything changed, written back whole by ``atomic_write`` (a temporary file renamed over the old one): SQLite never
opens a path in the results root itself, so no journal or link there can redirect a write. When the results root
cannot be written (another user's, read-only) the catalogue serves from memory and says so.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.compare import Samples, samples_of
from ..errors import ProtolabError
from ..plan.coordinates import point_of
from ..results.files import StoreError, atomic_write
from ..results.rundir import RunDir
from ..trust import UnsafePath, open_nofollow
from .fingerprint import Fingerprint, fingerprint

DB_NAME = "catalogue.sqlite"
SCHEMA = 1
#: The figures history shows per configuration, in this order (a CPU figure only where telemetry measured it).
HEADLINE = ("iops", "mbps", "lat_mean_us", "lat_p99_us", "cpu_us_per_io_loadgen", "cpu_us_per_io_total")

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, stamp TEXT NOT NULL, plan TEXT NOT NULL, started TEXT NOT NULL,
                   status TEXT NOT NULL, cells INTEGER NOT NULL, env TEXT NOT NULL, error TEXT);
CREATE TABLE samples (run_id TEXT NOT NULL, workload TEXT NOT NULL, point TEXT NOT NULL, point_rank INTEGER NOT NULL,
                      configuration TEXT NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL);
CREATE INDEX samples_run ON samples (run_id);
"""


@dataclass(frozen=True)
class RunEntry:
    """One run directory as the catalogue lists it."""

    run_id: str
    plan: str
    started: str
    status: str
    cells: int  # records that count (one per cell and repeat)
    env: Fingerprint
    error: str = ""  # why the run directory could not be read ('' when it was)


@dataclass
class Catalogue:
    """The catalogue of one results root, fresh: what the run directories hold now."""

    root: Path
    db: sqlite3.Connection
    note: str = ""  # what was done to bring it up to date ('' when it already was)
    ignored: list[str] = field(default_factory=list)  # entries skipped on the way (symlinks), one line each
    saved: bool = False

    def save(self) -> str:
        """Write the catalogue to RESULTS/catalogue.sqlite when it changed; returns `note`, with why it could not be
        written when it could not (it then serves from memory)."""
        if self.note and not self.saved:
            try:
                atomic_write(self.root / DB_NAME, self.db.serialize())
            except (StoreError, UnsafePath) as e:
                self.note += f" (kept in memory only: {e})"
            self.saved = True
        return self.note

    def runs(self, plan: str | None = None) -> list[RunEntry]:
        """The readable runs (of ``plan``), oldest first."""
        rows = self.db.execute("SELECT run_id, plan, started, status, cells, env, error FROM runs WHERE error IS "
                               "NULL" + (" AND plan = ?" if plan is not None else "") + " ORDER BY started, run_id",
                               (plan,) if plan is not None else ()).fetchall()
        return [RunEntry(r[0], r[1], r[2], r[3], r[4], Fingerprint(**json.loads(r[5]))) for r in rows]

    def unreadable(self) -> list[RunEntry]:
        """Run directories the catalogue could not read, with why."""
        rows = self.db.execute("SELECT run_id, error FROM runs WHERE error IS NOT NULL ORDER BY run_id").fetchall()
        return [RunEntry(r[0], "", "", "", 0, Fingerprint(""), r[1]) for r in rows]

    def plans(self) -> list[tuple[str, int, str]]:
        """(plan name, number of runs, newest run) per plan, by name."""
        return [tuple(r) for r in self.db.execute(  # type: ignore[misc]
            "SELECT plan, COUNT(*), MAX(run_id) FROM runs WHERE error IS NULL GROUP BY plan ORDER BY plan")]

    def samples(self, run_id: str) -> Samples:
        """The run's values per metric and cell (workload, load point, configuration), one per repeat, cells in
        their load points' order."""
        out: Samples = {}
        for metric, workload, point, configuration, value in self.db.execute(
                "SELECT metric, workload, point, configuration, value FROM samples WHERE run_id = ? "
                "ORDER BY rowid", (run_id,)):
            out.setdefault(metric, {}).setdefault((workload, point, configuration), []).append(value)
        return out

    def point_ranks(self, run_id: str) -> dict[tuple[str, str], int]:
        """(workload, load point) → its place among the run's load points."""
        return {(w, p): k for w, p, k in self.db.execute(
            "SELECT DISTINCT workload, point, point_rank FROM samples WHERE run_id = ?", (run_id,))}


def _stamp(path: Path) -> str:
    """What changes when a run directory's manifest or records change: mtime, size and inode of each."""
    parts = []
    for name in ("manifest.json", "records.jsonl", "records"):
        try:
            st = os.lstat(path / name)
            parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}:{st.st_ino}")
        except FileNotFoundError:
            parts.append(f"{name}:-")
    return ";".join(parts)


def _scan(root: Path) -> tuple[dict[str, str], list[str]]:
    """{run id: stamp} of every run directory directly under ``root``, and a line per symlink ignored."""
    found, ignored = {}, []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as e:
        raise ProtolabError(f"{root}: cannot read the results directory ({e.strerror}); give --results DIR") from None
    for e in entries:
        if e.is_symlink():
            ignored.append(f"{e.name}: a symlink, not indexed (protolab follows no link in a results directory)")
            continue
        if not e.is_dir(follow_symlinks=False):
            continue
        try:
            st = os.lstat(Path(e.path) / "manifest.json")
        except OSError:
            continue  # not a run directory (a compare or history folder)
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            found[e.name] = _stamp(Path(e.path))
    return found, ignored


def _index(db: sqlite3.Connection, path: Path, stamp: str) -> None:
    """Read one run directory into the catalogue (its row marked with the reason when it cannot be read)."""
    run_id = path.name
    db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
    try:
        rd = RunDir.open(path, write=False)
        manifest = rd.manifest()
        records = rd.records()
    except ProtolabError as e:
        db.execute("INSERT INTO runs VALUES (?, ?, '', '', '', 0, '{}', ?)", (run_id, stamp, str(e)))
        return
    env = fingerprint(manifest)
    db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
               (run_id, stamp, env.plan, manifest.started or "", manifest.status or "unknown", len(records),
                json.dumps(env.as_dict())))
    ranks = {p: k for k, p in enumerate(sorted({point_of(r) for r in records}))}
    rank_of = {(r.workload, point_of(r).label): ranks[point_of(r)] for r in records}
    rows = [(run_id, w, p, rank_of[(w, p)], c, metric, v)
            for metric, cells in samples_of(records, HEADLINE).items()
            for (w, p, c), values in cells.items() for v in values]
    db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _fresh() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript(_TABLES)
    db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
    return db


def _load(path: Path) -> tuple[sqlite3.Connection | None, str]:
    """The stored catalogue in memory, or (None, why it cannot be trusted)."""
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnsafePath) as e:
        return None, f"unreadable ({getattr(e, 'strerror', None) or 'a symlink'})"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, "not a file"
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
            # another user could have written it: its figures would be theirs, not the run directories'
            return None, f"not trusted (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})"
        data = f.read()
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(data)
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("damaged")
        schema = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if schema is None or schema[0] != str(SCHEMA):
            raise sqlite3.DatabaseError("another schema")
        for row in db.execute("SELECT run_id, stamp, plan, started, status, cells, env, error FROM runs"):
            if not all(isinstance(v, str) for v in row[:5]) or not isinstance(row[5], int):
                raise ValueError("a run's row is not what protolab writes")
            if row[7] is None:
                Fingerprint(**json.loads(row[6]))  # a readable run's environment must read back
        bad = db.execute("SELECT COUNT(*) FROM samples WHERE typeof(value) != 'real' OR typeof(point_rank) != "
                         "'integer'").fetchone()[0]
        if bad:
            raise ValueError("a value is not a number")
    except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as e:
        db.close()
        return None, f"damaged ({e})"
    return db, ""


def open_catalogue(root: Path) -> Catalogue:
    """The catalogue of ``root``, brought up to date with its run directories in memory (`Catalogue.save` writes
    it, once the command's input is known to be good: a refused command leaves nothing behind)."""
    root = Path(root)
    if not root.is_dir():
        raise ProtolabError(f"{root}: no such results directory; give --results DIR (where 'protolab run' wrote "
                            "its run directories)")
    found, ignored = _scan(root)
    db, why = _load(root / DB_NAME)
    rebuilt = db is None
    if db is None:
        db = _fresh()
    known = dict(db.execute("SELECT run_id, stamp FROM runs").fetchall())
    gone = [r for r in known if r not in found]
    stale = [r for r, s in found.items() if known.get(r) != s]
    for r in gone:
        db.execute("DELETE FROM runs WHERE run_id = ?", (r,))
        db.execute("DELETE FROM samples WHERE run_id = ?", (r,))
    for r in stale:
        _index(db, root / r, found[r])
    db.commit()
    if rebuilt:
        note = f"catalogue {why}: built from {len(found)} run director{'y' if len(found) == 1 else 'ies'}"
    elif gone or stale:
        new = sum(1 for r in stale if r not in known)
        note = f"catalogue refreshed: {new} new, {len(stale) - new} changed, {len(gone)} gone"
    else:
        note = ""
    return Catalogue(root, db, note, ignored)
