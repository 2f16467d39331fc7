"""`[method] breakdown`: where each microsecond of an I/O goes — a sampled capture at both ends of the storage link.

    [method]
    breakdown = true           # default false

On the last repeat of each cell (with adaptive repeats: the last of the `min` every cell gets), tcpdump runs for a
sub-window of the measured window in the load host's namespace on its storage port and in the storage namespace
on the server's port, and tshark's own dissectors match each request to its reply (telemetry.capture, run.capture):
the mean request→reply time at each point, and the window's IOPS with and without the capture (its cost).

The sub-window starts 1 s into the window (fio's connections are busy by then) and lasts min(2 s, duration / 3):
2 s of small I/Os at 1GbE is ~180 K headers, enough pairs for a mean and a few seconds of tshark; a third of the
window leaves at least one interval before and one after it uncaptured, to read the capture's cost against.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_serializer

from .verify import WithVerify

#: Seconds into the measured window the capture starts, and its longest length.
START_S = 1.0
MOST_S = 2.0


def sub_window(duration: float) -> tuple[float, float]:
    """(start, seconds) of the capture in a measured window of ``duration`` seconds (see the module's text)."""
    return START_S, min(MOST_S, duration / 3.0)


class WithBreakdown(WithVerify):
    """The parts of [method] that ask for verification (plan.verify) and for the breakdown (plan.model's Method)."""

    breakdown: bool = Field(
        default=False, description="capture a sub-window of each cell's last repeat at the load host's storage "
        "port and the server's, and match requests to replies with tshark: the request→reply time at each point "
        "(service_times; embedded lab only; plan.breakdown)")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # as before verify and breakdown existed: no format bump
        out = handler(self)
        return {k: v for k, v in out.items() if not (k == "verify" and v is None or k == "breakdown" and not v)}


def check_breakdown(plan: Any) -> str | None:
    """Why ``plan``'s method.breakdown cannot run (one line naming the field), or None."""
    if not plan.method.breakdown:
        return None
    if not plan.uses_lab() or plan.lab is None:
        return ("method.breakdown: the capture points are the embedded lab's (a load host's storage port and the "
                "server's); use lab: targets or remove breakdown")
    from .servers import kernel_path

    for c in plan.configurations:
        if kernel_path(plan.target_of(c).url, c.server):
            return (f"method.breakdown: configuration {c.name} is served or reached by a guest's kernel, whose "
                    "traffic no capture point of the lab sees whole; remove it or breakdown")
    if plan.method.duration < 3 * START_S:
        return (f"method.breakdown: method.duration = {plan.method.duration:g}s; the capture starts {START_S:g}s "
                "into the window and lasts a third of it: give the window at least 3s")
    return None
