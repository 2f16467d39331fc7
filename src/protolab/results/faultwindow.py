"""What a faulted cell's window did and saw (plan.faults): the fault's actions with their times, what had to be
undone after, the I/O errors fio counted, and the fine timeline (engine.faultlog) — carried in its record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FaultAction(_Record):
    """One call of the lab's fault controls during the window."""

    action: str = Field(description="what was done, e.g. 'link_down port 0', 'server_start'")
    planned_s: float = Field(description="when the plan asked for it, seconds after the warm-up's end")
    at_s: float = Field(description="when it was done, seconds after the warm-up's end (monotonic clock)")
    wall: str = Field(description="when it was done, wall clock (UTC, ISO 8601)")
    took_s: float = Field(default=0.0, description="how long the control took to return")
    error: str | None = Field(default=None, description="why the control failed, if it did")


class FaultWindow(_Record):
    """A window of a plan with faults: its fault ('none': the control), what was done, and its fine timeline."""

    fault: str = Field(description="the fault's name, or 'none'")
    kind: str | None = Field(default=None, description="link_down, server_restart or array_stall")
    at_s: float | None = Field(default=None, description="the plan's start of the fault, s into the window")
    duration_s: float | None = Field(default=None, description="the plan's duration of the fault, s")
    port: int | None = Field(default=None, description="link_down: the storage port (None: all)")
    actions: list[FaultAction] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list, description="what the lab had to undo after the window")
    errors: int = Field(default=0, description="I/O errors fio counted (continue_on_error), the whole run")
    first_error: str | None = Field(default=None, description="fio's first error, in words")
    first_error_s: tuple[float, float] | None = Field(
        default=None, description="when fio's first error came, s into the window (the actions' clock): after the "
        "last status that counted none had come, by the time the first that counted one came")
    step_ms: int = Field(default=10, description="the timeline's bin")
    iops: list[int] = Field(default_factory=list, description="IOPS per bin over the window, summed over jobs "
                            "(0: no completion in the bin)")
    lat_us: list[float | None] = Field(default_factory=list, description="mean completion latency per 100 ms, µs")
    ended_early: str | None = Field(default=None, description="fio gave up before the window's end (its error): "
                                    "the timeline has no completion from there")
    timeline_file: str | None = Field(default=None, description="the 10 ms timeline's file, relative to the run "
                                      "directory")

    def span_s(self) -> tuple[float, float] | None:
        """(start, end) of the fault in the window as it was done (the first action, and the planned length), or
        None for 'none'."""
        if self.at_s is None or self.duration_s is None:
            return None
        start = self.actions[0].at_s if self.actions else self.at_s
        return start, start + self.duration_s


def gave_up_words(error: str | None, most: int = 160) -> str:
    """What fio said when it gave up, without the cell's name protolab put before it ('cell …: fio failed: …')."""
    text = (error or "").split(": fio failed: ", 1)[-1]
    text = text.split(": ", 1)[1] if text.startswith("cell ") and ": " in text else text
    return text if len(text) <= most else text[:most - 1] + "…"
