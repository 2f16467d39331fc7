"""The run directory's manifest, typed: what it holds (`Manifest`) and the events that change it (`Events`).

Every write to manifest.json goes through one `Events` method — a run started, a session started or ended, the
testbed up, a window begun, a cell measured, a stage step done, repeating stopped — each an atomic replacement of
the file. Readers get a `Manifest` with typed fields; keys this protolab does not know (written by a newer one)
are kept as they are.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .files import now


class _Store(Protocol):
    """What the events need of a run directory (results.rundir.RunDir)."""

    def manifest(self) -> dict[str, Any]: ...

    def _write_fields(self, **fields: Any) -> None: ...


class Session(BaseModel):
    """One session of a run: `protolab run`, then each `protolab resume`."""

    model_config = ConfigDict(extra="allow")

    session: int
    started: Optional[str] = None
    ended: Optional[str] = None
    how: str = "running"  # running | complete | interrupted | failed
    cells_planned: Optional[int] = None
    cells_measured: int = 0
    provenance: dict[str, Any] = Field(default_factory=dict)


class Manifest(BaseModel):
    """manifest.json with its types (other keys are kept as they are)."""

    model_config = ConfigDict(extra="allow")

    schema_version: Any = None
    run_id: Optional[str] = None
    status: Optional[str] = None  # running | complete | interrupted | failed
    phase: Optional[str] = None
    error: Optional[str] = None
    dimensions: list[str] = []
    plan: Optional[dict[str, Any]] = None
    plan_text: Optional[str] = None
    plan_source: Optional[str] = None
    plan_format: int = 1  # the plan format the stored plan was written in (plan.migrate); absent: the oldest
    provenance: Optional[dict[str, Any]] = None
    started: Optional[str] = None
    ended: Optional[str] = None
    testbed: Optional[dict[str, Any]] = None
    agents: Optional[Any] = None
    targets: Optional[dict[str, Any]] = None
    initialised: Optional[dict[str, Any]] = None
    snapshot: Optional[str] = None
    sessions: list[Session] = []
    cells_total: Optional[int] = None
    cells_done: Optional[int] = None
    last_seq: Optional[int] = None
    measuring: Optional[dict[str, Any]] = None  # the window being measured: {seq, cell_id, session}
    interrupted_windows: list[dict[str, Any]] = []
    stages: Optional[list[Any]] = None
    repeats_stopped: Optional[dict[str, Any]] = None


class Events:
    """The only writer of a run directory's manifest."""

    def __init__(self, rundir: _Store):
        self.rundir = rundir

    def _set(self, **fields: Any) -> None:
        self.rundir._write_fields(**fields)

    def read(self) -> Manifest:
        """The manifest, typed."""
        return Manifest.model_validate(self.rundir.manifest())

    # -- a session ---------------------------------------------------------------------------------

    def session_started(self, cells_planned: int, provenance: dict[str, Any]) -> int:
        """A session begins: listed with its provenance; the run is running again. Returns its number."""
        sessions = list(self.rundir.manifest().get("sessions", []))
        number = len(sessions) + 1
        sessions.append(Session(session=number, started=now(), cells_planned=cells_planned,
                                provenance=provenance).model_dump())
        self._set(status="running", sessions=sessions, ended=None)
        return number

    def phase(self, phase: str) -> None:
        """What the session is doing (the manifest of an interrupted run names it)."""
        self._set(phase=phase)

    def testbed_up(self, description: dict[str, Any]) -> None:
        """The testbed is up: what it is."""
        self._set(testbed=description)

    def agents(self, agents: Any) -> None:
        """The fio agents the testbed started (host → how it is reached)."""
        self._set(agents=agents)

    def targets(self, labels: dict[str, Any]) -> None:
        """Where each configuration's I/O goes, in the testbed's words."""
        self._set(targets=labels)

    def initialised(self, workload: str, duration_s: float, iops: Any, session: int) -> None:
        """The data was initialised once for the study."""
        self._set(initialised={"workload": workload, "duration_s": duration_s, "iops": iops, "session": session})

    def snapshot_taken(self) -> None:
        """Every cell restores to the state of now."""
        self._set(snapshot=now())

    def window_started(self, seq: int, cell_id: str, session: int) -> None:
        """A window wrote its first series rows: its seq must never be reused, even if it ends without a record."""
        self._set(measuring={"seq": seq, "cell_id": cell_id, "session": session})

    def window_interrupted(self, window: dict[str, Any]) -> None:
        """A window of an earlier session ended without a record: listed for the report."""
        self._set(interrupted_windows=[*self.rundir.manifest().get("interrupted_windows", []), window])

    def cell_measured(self, seq: int) -> None:
        """A record was stored."""
        self._set(cells_done=int(self.rundir.manifest().get("cells_done", 0)) + 1, last_seq=seq)

    def stage_done(self, steps: list[dict[str, Any]], session: int) -> None:
        """A stage step changed the data (a fill level written): what was done, in which session."""
        self._set(stages=[*self.rundir.manifest().get("stages", []), *({**d, "session": session} for d in steps)])

    def repeats_stopped(self, stops: dict[str, str]) -> None:
        """Adaptive repeats: why each cell's repeating ended (kept across sessions)."""
        self._set(repeats_stopped={**self.rundir.manifest().get("repeats_stopped", {}), **stops})

    def measured_all(self) -> None:
        """Every cell is measured; the report is next."""
        self._set(phase="report", status="complete")

    def session_ended(self, number: int, how: str, error: str | None, measured: int | None) -> None:
        """How session ``number`` ended, and so the run's status."""
        sessions = list(self.rundir.manifest().get("sessions", []))
        if sessions and sessions[-1].get("session") == number:
            s = dict(sessions[-1])
            s.update(ended=now(), how=how)
            if measured is not None:
                s["cells_measured"] = measured
            sessions[-1] = s
        fields: dict[str, Any] = {"status": how, "ended": now(), "sessions": sessions}
        if how == "complete":
            fields["phase"] = "done"
        if error is not None:
            fields["error"] = error
        self._set(**fields)
