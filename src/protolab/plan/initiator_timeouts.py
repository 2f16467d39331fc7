"""How long a load guest's kernel initiator waits before it gives up on a lost path (a configuration's ``iscsi``):
the timeouts that decide what a fault does to the application (plan.faults).

    [[configurations]]
    name = "lio-5s"
    target = "lab:iscsi"
    server = "lio"
    iscsi = { replacement_timeout = "5s", noop_out_interval = "1s", noop_out_timeout = "1s" }

open-iscsi (iscsi_tcp, logged in by iscsistart, recovered by iscsid in the guest; vm.initiators.iscsi):
- ``noop_out_interval``: a NOP-Out is sent after this long without anything received; 0: none.
- ``noop_out_timeout``: the connection fails when that NOP-Out is not answered within this; 0: never.
  A lost link is detected between interval + timeout and 2 × interval + timeout after the last reply.
- ``replacement_timeout``: once the connection failed, the SCSI commands wait this long for the session to be
  logged in again, then fail back to the application (and every new one fails until it is).
A value not given is open-iscsi's own default as Debian's iscsid.conf sets it (`DEFAULTS`: 120 s, 5 s, 5 s), and the
record says so; iscsistart alone would turn NOP-Outs off, which a session that iscsid recovers does not keep.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from .units import parse_duration
from .workload import _Model

#: open-iscsi's defaults (Debian's /etc/iscsi/iscsid.conf, open-iscsi 2.1.8), seconds
DEFAULTS = {"replacement_timeout": 120, "noop_out_interval": 5, "noop_out_timeout": 5}
MAX_S = 3600


class IscsiTimeouts(BaseModel):
    """A load guest's open-iscsi timeouts, whole seconds (see the module's text); None: open-iscsi's default."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    replacement_timeout: int | None = Field(
        default=None, description="seconds SCSI commands wait for the session's recovery before they fail "
        "(1-3600; default 120)")
    noop_out_interval: int | None = Field(
        default=None, description="seconds without a reply before a NOP-Out is sent (0: never; default 5)")
    noop_out_timeout: int | None = Field(
        default=None, description="seconds a NOP-Out may go unanswered before the connection fails (0: never; "
        "default 5)")

    @field_validator("replacement_timeout", "noop_out_interval", "noop_out_timeout", mode="before")
    @classmethod
    def _seconds(cls, v: Any, info) -> int | None:
        if v is None:
            return None
        try:
            seconds = parse_duration(v)
        except ValueError as e:
            raise ValueError(f"{info.field_name}: {e}") from None
        low = 1 if info.field_name == "replacement_timeout" else 0
        if seconds != int(seconds) or not low <= seconds <= MAX_S:
            raise ValueError(f"{info.field_name} {v!r}: give whole seconds from {low} to {MAX_S} (\"5s\")")
        return int(seconds)

    def effective(self) -> dict[str, int]:
        """Every timeout in force, seconds: the plan's, else open-iscsi's default."""
        return {k: d if getattr(self, k) is None else getattr(self, k) for k, d in DEFAULTS.items()}

    def defaults(self) -> list[str]:
        """The timeouts left at open-iscsi's default."""
        return [k for k in DEFAULTS if getattr(self, k) is None]

    def detection_s(self) -> tuple[int, int] | None:
        """(earliest, latest) seconds after the last reply before a lost connection is detected, or None when
        NOP-Outs are off (TCP and the SCSI command timeout find it, much later)."""
        t = self.effective()
        if not t["noop_out_interval"] or not t["noop_out_timeout"]:
            return None
        return t["noop_out_interval"] + t["noop_out_timeout"], 2 * t["noop_out_interval"] + t["noop_out_timeout"]

    def words(self) -> str:
        """For people: 'replacement_timeout 5 s, NOP-Out every 1 s, timeout 1 s (default: …)'."""
        t = self.effective()
        said = (f"replacement_timeout {t['replacement_timeout']} s, NOP-Out every {t['noop_out_interval']} s, "
                f"timeout {t['noop_out_timeout']} s")
        left = self.defaults()
        return said + (f" ({', '.join(left)}: open-iscsi's default)" if left else "")


class WithIscsiTimeouts(_Model):
    """The part of a configuration that gives its load guests' open-iscsi timeouts (plan.model's Configuration)."""

    iscsi: IscsiTimeouts | None = Field(default=None, description="the load guests' open-iscsi timeouts (server = "
                                        "\"lio\"): { replacement_timeout, noop_out_interval, noop_out_timeout }")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # without, a configuration as before it existed: no format bump
        own = WithIscsiTimeouts.model_fields
        return {k: v for k, v in handler(self).items() if k not in own or v is not None}
