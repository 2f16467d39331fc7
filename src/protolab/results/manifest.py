"""The run directory's manifest.json (schema 2), typed: what a run is and how far it got, changed only by events.

``Manifest`` is what a reader gets: schema version, run id, the stored plan (text, data and plan format),
provenance, the testbed, the sessions (the run, each resume) and the progress of the cells, stages and windows.
``Events`` owns the file: it reads and checks it once, and its events — run started, session started,
session killed, phase, testbed up, agents, targets, initialised, snapshot taken, stage done, window started, window
interrupted, cell measured, repeats stopped, measured all, session ended — are the only way to change it. Each event
replaces the file atomically (temporary file, fsync, rename; a symlink at the name is replaced, never
followed), and the file is read without following a symlink.

Every key is optional when read: a schema-1 manifest, or one written by any older protolab, opens as it is;
keys this protolab does not know are kept as they are (a schema-1 ``lab`` or ``cells``).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .. import __version__
from ..errors import ProtolabError
from .files import now, write_json

MANIFEST_SCHEMA = 2
READABLE_SCHEMAS = (1, 2)

How = Literal["running", "complete", "failed", "interrupted"]


class _Part(BaseModel):
    # read-only for readers (events make new copies); keys of other protolab versions are kept
    model_config = ConfigDict(extra="allow", frozen=True)


class Provenance(_Part):
    """Where and with what a session measured."""

    protolab: Optional[str] = None
    fio_version: Optional[str] = None
    fio_engines: list[str] = []
    fio_path: Optional[str] = None
    kernel: Optional[str] = None
    machine: Optional[str] = None
    hostname: Optional[str] = None
    cpu_model: Optional[str] = None
    cpus: Optional[int] = None
    python: Optional[str] = None

    @classmethod
    def of_machine(cls, fio_version: str, fio_engines: list[str], fio_path: str) -> "Provenance":
        """This machine, this Python and protolab, and the given fio."""
        cpu = ""
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        return cls(protolab=__version__, fio_version=fio_version, fio_engines=list(fio_engines), fio_path=fio_path,
                   kernel=platform.release(), machine=platform.machine(), hostname=platform.node(), cpu_model=cpu,
                   cpus=os.cpu_count(), python=platform.python_version())


class Session(_Part):
    """One session of the run: the first, or a resume."""

    session: int = 0
    started: Optional[str] = None
    ended: Optional[str] = None
    how: How = "running"
    cells_planned: Optional[int] = None
    cells_measured: Optional[int] = None
    provenance: Optional[Provenance] = None
    killed: Optional[str] = None  # when a later session found its process gone without a word (SIGKILL)


class Window(_Part):
    """A measured window that has written series rows (under its seq) before its record."""

    seq: int
    cell_id: Optional[str] = None
    session: Optional[int] = None


class Initialised(_Part):
    """The initialisation access spec that ran on every target before the snapshot."""

    workload: Optional[str] = None
    duration_s: Optional[float] = None
    iops: dict[str, float] = {}  # by configuration whose target it wrote
    session: Optional[int] = None


class RunStart(BaseModel):
    """What a new run directory's manifest starts with (``Events.run_started``)."""

    model_config = ConfigDict(frozen=True)

    plan: dict[str, Any]
    plan_text: str
    plan_format: int
    provenance: Provenance
    plan_source: str = ""
    testbed: dict[str, Any] = {}
    cells_total: int = 0
    dimensions: list[str] = []


class Manifest(_Part):
    """manifest.json as read: every field typed, every one optional (older manifests lack some)."""

    schema_version: Any = None  # checked by RunDir.open against READABLE_SCHEMAS, with its own message
    run_id: Optional[str] = None
    dimensions: list[str] = []
    status: Optional[How] = None
    phase: Optional[str] = None
    plan_source: Optional[str] = None
    plan: Optional[dict[str, Any]] = None  # the Plan as data; plan.migrate brings an older one up to date
    plan_text: Optional[str] = None
    plan_format: int = 1  # the plan format that stored ``plan`` (plan.migrate); absent: the oldest
    provenance: Optional[Provenance] = None
    started: Optional[str] = None
    ended: Optional[str] = None
    cells_total: Optional[int] = None
    cells_done: int = 0
    last_seq: int = 0
    testbed: Optional[dict[str, Any]] = None  # the testbed's own description (compared on resume)
    sessions: tuple[Session, ...] = ()
    agents: tuple[str, ...] = ()
    targets: dict[str, str] = {}  # configuration → its target in one line
    attached: tuple[dict[str, Any], ...] = ()  # targets attached on the hosts, as the kernel reported them
    initialised: Optional[Initialised] = None
    snapshot: Optional[str] = None
    stages: tuple[dict[str, Any], ...] = ()  # what each stage step did, as the stage says it, and its session
    measuring: Optional[Window] = None
    interrupted_windows: tuple[Window, ...] = ()
    repeats_stopped: dict[str, str] = {}  # cell (without repeat) → why its repeating ended
    error: Optional[str] = None

    @field_validator("cells_done", "last_seq", "sessions", "agents", "targets", "attached", "stages",
                     "interrupted_windows",
                     "repeats_stopped", mode="before")
    @classmethod
    def _null_is_none(cls, v: Any, info: Any) -> Any:
        """A null is "none yet" (an older protolab wrote some of these as null)."""
        return cls.model_fields[info.field_name].default if v is None else v

    @property
    def schema(self) -> int:
        """The schema version the directory was written with (0: none said)."""
        return int(self.schema_version or 0)

    @property
    def first_provenance(self) -> Optional[Provenance]:
        """Where the run's first session measured (the run's own, for a manifest without sessions)."""
        return (self.sessions[0].provenance if self.sessions else None) or self.provenance

    @property
    def next_seq(self) -> int:
        """The seq the next window gets: after every record and every window that wrote rows."""
        return max(self.last_seq, self.measuring.seq if self.measuring else 0) + 1

    @property
    def unfinished_window(self) -> Optional[Window]:
        """The window that wrote rows and was stopped before its record (the last one that started)."""
        return self.measuring if self.measuring is not None and self.measuring.seq > self.last_seq else None


def check_manifest(data: Any, path: Path) -> Manifest:
    """``data`` as a Manifest; ProtolabError naming the file and the first field that is not what protolab writes."""
    if not isinstance(data, dict):
        raise ProtolabError(f"{path}: not a manifest (a JSON object is expected, found {type(data).__name__}); "
                            "the run directory is damaged")
    try:
        return Manifest.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ProtolabError(f"{path}: field {where!r}: {err['msg']}; the run directory is damaged") from None


def _read_text(path: Path) -> str:
    """The file's text, never through a symlink (OSError if ``path`` is one)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read().decode()


class Events:
    """manifest.json of one run directory: read and checked once, then changed only by the events below."""

    def __init__(self, path: Path, current: Manifest | None = None, clock: Callable[[], str] = now) -> None:
        self.path = path
        self._current = current
        self.clock = clock

    def read(self) -> Manifest:
        """The manifest (read from disk the first time: ValueError or OSError if unreadable, ProtolabError if it
        is not of the right shape)."""
        if self._current is None:
            self._current = check_manifest(json.loads(_read_text(self.path)), self.path)
        return self._current

    def _write(self, **changes: Any) -> None:
        """The manifest with ``changes`` (typed values), replaced atomically on disk, then kept."""
        new = self.read().model_copy(update=changes)
        write_json(self.path, new.model_dump(mode="json", exclude_unset=True))
        self._current = new

    # -- the events, in the order a run meets them ------------------------------------------------------------

    def run_started(self, run_id: str, start: RunStart) -> None:
        """A new run: its plan, provenance and testbed; no session yet, nothing measured."""
        self._current = Manifest()
        self._write(schema_version=MANIFEST_SCHEMA, run_id=run_id, dimensions=list(start.dimensions),
                    status="running", phase="starting", plan_source=start.plan_source, plan=start.plan,
                    plan_text=start.plan_text, plan_format=start.plan_format, provenance=start.provenance,
                    started=self.clock(), ended=None, cells_total=start.cells_total, cells_done=0, last_seq=0,
                    testbed=start.testbed, sessions=())

    def session_started(self, cells_planned: int, provenance: Provenance) -> int:
        """A session (the run's first, or a resume) begins; returns its number."""
        m = self.read()
        number = len(m.sessions) + 1
        s = Session(session=number, started=self.clock(), ended=None, how="running", cells_planned=cells_planned,
                    cells_measured=0, provenance=provenance)
        self._write(status="running", sessions=(*m.sessions, s), ended=None)
        return number

    def session_killed(self, session: int, stored: int, last_seq: int) -> None:
        """A later session found session ``session``'s process gone (killed outright) and cleaned what it left; the
        counts are the records stored (a kill between a record and its count here leaves the count one short)."""
        m = self.read()
        sessions = tuple(s.model_copy(update={"how": "interrupted", "killed": self.clock()})
                         if s.session == session and s.how == "running" else s for s in m.sessions)
        self._write(sessions=sessions, cells_done=max(m.cells_done, stored), last_seq=max(m.last_seq, last_seq))

    def phase(self, name: str) -> None:
        """The step the session is at (testbed up, prepare, fill 25 %, measure, teardown, …)."""
        self._write(phase=name)

    def testbed_up(self, description: dict[str, Any]) -> None:
        """The testbed is up: what it says it is."""
        self._write(testbed=description)

    def agents(self, agents: list[str]) -> None:
        """The fio servers this run uses now, one line each."""
        self._write(agents=tuple(agents))

    def targets(self, targets: dict[str, str]) -> None:
        """Each configuration's target, in one line."""
        self._write(targets=dict(targets))

    def attached(self, attached: list[dict[str, Any]]) -> None:
        """The targets attached on the hosts (run.attaching), as the kernel reported them: this session's latest for
        each host and target, beside what earlier sessions recorded for the others."""
        new = {(a.get("host"), a.get("target")) for a in attached}
        kept = [a for a in self.read().attached if (a.get("host"), a.get("target")) not in new]
        self._write(attached=(*kept, *attached))

    def initialised(self, workload: str, duration_s: float, iops: dict[str, float], session: int) -> None:
        """The initialisation access spec ran on every target."""
        self._write(initialised=Initialised(workload=workload, duration_s=duration_s, iops=iops, session=session))

    def snapshot_taken(self) -> None:
        """The testbed's data was snapshotted (each cell restores to it)."""
        self._write(snapshot=self.clock())

    def stage_done(self, did: list[dict[str, Any]], session: int) -> None:
        """A stage step changed the data: what it did (one entry per target), kept across sessions."""
        self._write(stages=(*self.read().stages, *({**d, "session": session} for d in did)))

    def window_interrupted(self, window: Window) -> None:
        """A window of an earlier session wrote rows and no record: listed for the report before its seq is passed."""
        self._write(interrupted_windows=(*self.read().interrupted_windows, window))

    def window_started(self, seq: int, cell_id: str, session: int) -> None:
        """A window wrote its first series rows: its seq is taken, even if it never ends."""
        self._write(measuring=Window(seq=seq, cell_id=cell_id, session=session))

    def cell_measured(self, seq: int, count: int = 1) -> None:
        """A record was stored (``count`` records, the last one ``seq``)."""
        m = self.read()
        self._write(cells_done=m.cells_done + count, last_seq=seq)

    def repeats_stopped(self, stops: dict[str, str]) -> None:
        """Adaptive repeats: why each cell's repeating ended (kept across sessions)."""
        self._write(repeats_stopped={**self.read().repeats_stopped, **stops})

    def measured_all(self) -> str:
        """Every cell is measured, the testbed is down and the report is being written: the run is complete and
        ended now (unless the report fails), so the report shows its end. Returns that instant."""
        m, at = self.read(), self.clock()
        sessions = list(m.sessions)
        if sessions:
            sessions[-1] = sessions[-1].model_copy(update={"ended": at, "how": "complete"})
        self._write(phase="report", status="complete", ended=at, sessions=tuple(sessions))
        return at

    def session_ended(self, session: int, how: How, error: str | None = None, measured: int | None = None,
                      at: str | None = None) -> None:
        """The session ``session`` ended ``how`` (with ``error``), after measuring ``measured`` cells, at ``at``
        (now when not given)."""
        m, at = self.read(), at or self.clock()
        sessions = list(m.sessions)
        if sessions and sessions[-1].session == session:
            update: dict[str, Any] = {"ended": at, "how": how}
            if measured is not None:
                update["cells_measured"] = measured
            sessions[-1] = sessions[-1].model_copy(update=update)
        changes: dict[str, Any] = {"status": how, "ended": at, "sessions": tuple(sessions)}
        if how == "complete":
            changes["phase"] = "done"
        if error is not None:
            changes["error"] = error
        self._write(**changes)
