"""Stored plans across plan-format versions: a plan kept in a run directory by an older protolab is brought up to
today's form by the migrations written when each version added fields, so `resume` can tell a plan that still
means the same from one that changed.

Each version that adds fields with a default lists them here, with the value that means "not used" (a workload
written before shapes existed has no bursts). A stored plan without a version is the oldest, version 1.
"""

from __future__ import annotations

from typing import Any

#: The plan format this protolab writes (bump it, and add a migration, whenever a plan field is added).
PLAN_FORMAT = 2

#: version → (the format it brings a plan to, {where: {field: value that means "not used"}}); where is
#: "plan", "method" or "workloads" (each workload).
MIGRATIONS: dict[int, tuple[int, dict[str, dict[str, Any]]]] = {
    1: (2, {
        "workloads": {"arrivals": "uniform", "bursts": None, "think_time": None, "think_every": 1,
                      "hot_zones": None, "skew": None, "replay": None, "trace": None},
        "method": {"fill": None, "interval": 1, "slo": None},
        "plan": {"seed_findings": [], "stage": None},
    }),
}


def migrate(stored: dict[str, Any], version: int) -> dict[str, Any]:
    """``stored`` (a plan's JSON dump written in plan format ``version``) in today's format."""
    plan = dict(stored)
    while version < PLAN_FORMAT:
        version, added = MIGRATIONS[version]
        for where, fields in added.items():
            if where == "plan":
                plan = {**fields, **plan}
            elif where == "method" and isinstance(plan.get("method"), dict):
                plan["method"] = {**fields, **plan["method"]}
            elif where == "workloads" and isinstance(plan.get("workloads"), list):
                plan["workloads"] = [{**fields, **w} if isinstance(w, dict) else w for w in plan["workloads"]]
    return plan
