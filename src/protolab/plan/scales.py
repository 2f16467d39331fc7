"""Scales: one plan, several sizes. `[scale.quick]` and `[scale.full]` tables override the plan's own keys.

    [method]
    duration = "5m"
    [scale.quick.method]      # merged into [method] when the plan runs at --scale quick
    duration = "3s"

Tables merge key by key; anything else (numbers, strings, arrays such as
load_points) is replaced. Without --scale a plan with scales runs at `quick` (or
its first scale): the safe size for a small machine.
"""

from __future__ import annotations

from typing import Any

from ..errors import PlanError

DEFAULT_SCALE = "quick"


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: tables recursively, everything else replaced."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def scales_of(data: dict[str, Any]) -> list[str]:
    """The scale names a parsed plan declares (in order)."""
    s = data.get("scale")
    return list(s) if isinstance(s, dict) else []


def apply_scale(data: dict[str, Any], scale: str | None, source: str) -> dict[str, Any]:
    """The plan data at ``scale`` (its `scale` key set to the chosen name), or as written when it has none."""
    scales = data.get("scale")
    if isinstance(scales, str) and scale in (None, scales):
        return data  # already at its scale (a plan stored by a run)
    if scales is None:
        if scale is not None:
            raise PlanError(f"{source}: --scale {scale}: this plan has no [scale.*] tables; run it without --scale")
        return data
    if not isinstance(scales, dict) or not scales or not all(isinstance(v, dict) for v in scales.values()):
        raise PlanError(f"{source}: scale: must be tables such as [scale.quick] and [scale.full] that override the "
                        "plan's keys")
    chosen = scale or (DEFAULT_SCALE if DEFAULT_SCALE in scales else next(iter(scales)))
    if chosen not in scales:
        raise PlanError(f"{source}: --scale {chosen}: no such scale; this plan has {', '.join(scales)}")
    if "scale" in scales[chosen]:
        raise PlanError(f"{source}: scale.{chosen}: a scale cannot set 'scale'; remove it")
    base = {k: v for k, v in data.items() if k != "scale"}
    return {**merge(base, scales[chosen]), "scale": chosen}
