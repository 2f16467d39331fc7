"""`[method] heatmap`: fio's completion latency histogram logs in every measured window, kept as a latency heatmap.

    [method]
    heatmap = true             # default: false

Each window's jobs log their latency histograms every 100 ms (longer windows: at most 300 steps; engine.histlog),
binned into time × a log-spaced latency grid (analysis.heatmap) and kept per window in the run directory
(results.heatmapfile). The report draws one per configuration at the highest load point, its repeats added, and uses
them as the faults' latency panels. A plan cannot set fio's log options itself (plan.safety).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_serializer

from .breakdown import WithBreakdown


class WithHeatmap(WithBreakdown):
    """The part of [method] that asks for latency heatmaps, beside verification and the breakdown (plan.model's
    Method is one)."""

    heatmap: bool = Field(default=False, description="log fio's completion latency histograms in every measured "
                          "window and keep them as a latency heatmap (time × latency): the report draws them")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:  # a method without them dumps as before: no format bump
        out = handler(self)
        return {k: v for k, v in out.items() if not (k == "verify" and v is None) and not (k in ("breakdown",
                "heatmap") and not v)}
