"""`[[faults]]`: something breaks during the measured window — a storage port's link down, the protocol server
killed and started again, the array stalled — at a time and for a bounded duration (issue 43).

    [[faults]]
    name = "port0-down"       # its value of the `fault` coordinate (cells.csv, the report, the cell's id)
    kind = "link_down"        # "link_down", "server_restart" or "array_stall"
    at = "5s"                 # seconds into the measured window, at least 1
    duration = "5s"           # more than 0, at most 300 s; at + duration ≤ method.duration − 1
    port = 0                  # link_down only: the lab's storage port whose link goes down; default "all"

A fault is a point coordinate named ``fault`` (plan.coordinates): its value is the fault's name, and a plan with
faults also measures each configuration with no fault, value "none" — the control its stall and IOPS are read
against. Each value is its own cell, as an offered rate is (plan.rate_ladder): an outer loop of the expansion,
configurations interleaved at each. Nothing in a fault names a command or a file: the lab's own controls
(lab.faults) carry it out, at ``at`` and ``at + duration`` seconds after the warm-up's end (run.fault_schedule).
With [hypervisor], link_down only (the links the guests' traffic crosses: their host's NIC and the storage port),
one guest per host: its fio server sends the 10 ms logs to the client (engine.faultlog). How long a guest's kernel
initiator waits is its configuration's (plan.initiator_timeouts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from . import safety
from .sweep import UntouchedStep
from .units import format_duration, parse_duration

MAX_FAULTS = 20
MAX_FAULT_S = 300.0
#: The `fault` coordinate's value of the cells measured with no fault.
NO_FAULT = "none"
KINDS = ("link_down", "server_restart", "array_stall")
#: What each kind does, in the report's words.
KIND_WORDS = {"link_down": "link down", "server_restart": "server killed and restarted",
              "array_stall": "array stalled"}


class Fault(BaseModel):
    """One `[[faults]]` entry (see the module's text)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(description=safety.NAME_RULE + "; not \"none\"")
    kind: Literal["link_down", "server_restart", "array_stall"] = Field(
        description="link_down (a storage port's link), server_restart (the protocol's lab server killed, then "
        "started again), array_stall (the device model holds every request)")
    at: float = Field(description="seconds into the measured window when it starts, at least 1 (\"5s\")")
    duration: float = Field(description="seconds it lasts, more than 0 and at most 300 (\"5s\")")
    port: int | Literal["all"] | None = Field(
        default=None, description="link_down only: the lab's storage port whose link goes down, or \"all\" "
        "(default)")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        name = safety.check_name(v, "fault")
        if name == NO_FAULT:
            raise ValueError(f"name {NO_FAULT!r} is the value of the cells measured with no fault; choose another")
        return name

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> Any:
        if v not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {v!r})")
        return v

    @field_validator("at", mode="before")
    @classmethod
    def _at(cls, v: Any) -> float:
        seconds = parse_duration(v)
        if seconds < 1:
            raise ValueError(f"at must be at least 1s into the measured window, so that IOPS before the fault are "
                             f"measured (got {v!r})")
        return seconds

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        seconds = parse_duration(v)
        if not 0 < seconds <= MAX_FAULT_S:
            raise ValueError(f"duration must be more than 0 and at most {MAX_FAULT_S:g}s (got {v!r})")
        return seconds

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, v: Any) -> Any:
        if v is None or v == "all":
            return v
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 64:
            raise ValueError(f"port must be a storage port's number (0, 1, …) or \"all\" (got {v!r})")
        return v

    @model_validator(mode="after")
    def _port_for_links(self) -> "Fault":
        if self.port is not None and self.kind != "link_down":
            raise ValueError(f"port: only a link_down fault takes a port (this one is {self.kind}); remove it")
        return self

    @property
    def link_port(self) -> int | None:
        """The storage port whose link goes down; None: every storage port's."""
        return self.port if isinstance(self.port, int) else None

    @property
    def end(self) -> float:
        """When it ends, seconds into the measured window."""
        return self.at + self.duration

    def summary(self) -> str:
        """'port0-down: link of storage port 0 down at 5s for 5s'."""
        what = KIND_WORDS[self.kind]
        if self.kind == "link_down":
            what = f"link of storage port {self.port} down" if self.link_port is not None else "every storage " \
                "port's link down"
        return f"{self.name}: {what} at {format_duration(self.at)} for {format_duration(self.duration)}"


def check_fault_names(faults: list[Fault]) -> None:
    """ValueError when two faults share a name (each is one value of the `fault` coordinate)."""
    names = [f.name for f in faults]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"faults: names must be unique; repeated: {', '.join(dup)}")


@dataclass(frozen=True)
class FaultAxis:
    """The faults as a stage kind of the expansion (plan.stages.StageKind): "none", then each fault, each its own
    cell, nothing done to the data before it."""

    faults: tuple[Fault, ...]
    name: ClassVar[str] = "fault"
    sequence: ClassVar[bool] = False
    dimensions: ClassVar[tuple[str, ...]] = ("fault",)

    @property
    def values(self) -> tuple[str, ...]:
        return (NO_FAULT, *(f.name for f in self.faults))

    def step_list(self) -> list["FaultStep"]:
        return [FaultStep(NO_FAULT, None), *(FaultStep(f.name, f) for f in self.faults)]

    def applies(self, outer: Any) -> bool:
        return True


@dataclass(frozen=True)
class FaultStep(UntouchedStep):
    """One value of the `fault` coordinate (plan.stages.Step): its own cell, the data untouched; ``fault`` None for
    the cells measured with no fault."""

    value: str
    fault: Fault | None = None
    dimension: ClassVar[str] = "fault"

    @property
    def key(self) -> str:
        return f"fault-{self.value}"

    def coords(self) -> dict[str, str | int]:
        return {"fault": self.value}


def check_faults(plan: Any) -> str | None:
    """Why ``plan``'s faults cannot run (one line naming the field), or None."""
    faults = getattr(plan, "faults", None) or []
    if not faults:
        return None
    if not plan.uses_lab() or plan.lab is None:
        return ("faults: a fault is done by the embedded lab (its links, servers and device model); use lab: "
                "targets or remove [[faults]]")
    from .protocols import PROTOCOLS
    from .servers import kernel_path
    from .target_grammar import is_lab_target, protocol_named

    for c in plan.configurations:
        url = plan.target_of(c).url
        if not is_lab_target(url):
            return (f"faults: configuration {c.name} does not reach a lab export ({url}); a fault is the lab's: "
                    "give every configuration a lab: target")
    guests = plan.hypervisor is not None
    if guests and plan.hypervisor.vms_per_host > 1:
        return (f"faults: hypervisor.vms_per_host = {plan.hypervisor.vms_per_host}: a fault's 10 ms timeline is "
                "read from one guest's fio; give vms_per_host = 1")
    if plan.stage is not None:
        return "faults: not with [stage.fill] or [stage.age] yet (a fault would change what the stage measures)"
    several = [lp for lp in plan.load_points if lp.hosts > 1]
    if several:
        return (f"faults: load point with {several[0].hosts} hosts: a fault's 10 ms timeline is read from one "
                "fio run on one load host; give each load point hosts = 1")
    window = plan.method.duration
    for i, f in enumerate(faults):
        where = f"faults[{i}] ({f.name})"
        if guests and f.kind != "link_down":
            kernel = [c.name for c in plan.configurations if kernel_path(plan.target_of(c).url, c.server)]
            return (f"{where}.kind: {f.kind} with [hypervisor] is not done yet (" + (
                f"configuration {kernel[0]}'s server runs in the storage server guest's kernel, which protolab "
                "does not restart or stall" if kernel else "only link_down is measured through guests")
                + "); remove it or use link_down")
        if f.end > window - 1:
            return (f"{where}: at + duration = {f.end:g}s must end at least 1s before the measured window does "
                    f"(method.duration = {window:g}s), so that the recovery is measured")
        if f.kind == "link_down" and f.link_port is not None and f.link_port >= plan.lab.storage_ports:
            return (f"{where}.port: storage port {f.link_port} does not exist (lab.storage_ports = "
                    f"{plan.lab.storage_ports}); choose 0 to {plan.lab.storage_ports - 1} or \"all\"")
        if f.kind == "array_stall" and plan.lab.device.is_ram:
            return (f"{where}.kind: array_stall needs the pool's device model; give [lab.storage] one (e.g. "
                    "service_time = \"100us\", parallelism = 64)")
        if f.kind == "server_restart":
            for c in plan.configurations:
                protocol = protocol_named(plan.target_of(c).url)
                if protocol is not None and not PROTOCOLS[protocol].server:  # an unknown one: its target's refusal
                    return (f"{where}.kind: configuration {c.name} ({plan.target_of(c).url}) has no server to "
                            "restart; remove it or the fault")
    return None
