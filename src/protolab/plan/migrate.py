"""Stored plans across plan-format versions: a plan kept in a run directory by an older protolab is brought up to
today's form by the migrations written when each version added fields, so `resume` can tell a plan that still
means the same from one that changed.

Each version that adds fields with a default lists them here, with the value that means "not used" (a workload
written before shapes existed has no bursts). A stored plan without a version is the oldest, version 1.
"""

from __future__ import annotations

from typing import Any

#: The plan format this protolab writes (bump it, and add a migration, whenever a plan field is added).
PLAN_FORMAT = 10

#: version → (the format it brings a plan to, {where: {field: value that means "not used"}}); where is
#: "plan", "method", "workloads", "configurations" or "seed_findings" (each entry), "seed_claims" (each claim of each
#: seed finding), "targets" (each [targets] entry
#: and each configuration's inline target table), "move"
#: ({"table.field": "table.field"}) or "drop" ({list: [field, …]}: fields no longer kept, removed from each entry).
MIGRATIONS: dict[int, tuple[int, dict[str, dict[str, Any]]]] = {
    1: (2, {
        "workloads": {"arrivals": "uniform", "bursts": None, "think_time": None, "think_every": 1,
                      "hot_zones": None, "skew": None, "replay": None, "trace": None},
        "method": {"fill": None, "interval": 1, "slo": None, "cpu_priority": "normal"},
        "configurations": {"controller": None},
        "plan": {"seed_findings": [], "stage": None, "seed": "", "scale": None, "hypervisor": None},
    }),
    2: (3, {"move": {"method.fill": "stage.fill"}}),  # one form for every stage: [stage.fill]
    # seed findings become testable claims; the typed excuse ("here") goes: the report computes why
    3: (4, {"seed_findings": {"claims": []}, "drop": {"seed_findings": ["here"]}}),
    4: (5, {"configurations": {"cpu_limit": {}}}),  # a role's CPU capped per configuration
    5: (6, {"configurations": {"server": None, "sessions": None}}),  # the lab's server chosen (plan.servers)
    6: (7, {"targets": {"attach": None}}),  # a target attached on the hosts (plan.attach)
    7: (8, {"configurations": {"nfs": None}}),  # the NFS mount of the load guests of the lab's knfsd
    # a finding's section and untestable reason; a claim's band source and pool layout (plan.seed)
    8: (9, {"seed_findings": {"section": None, "untestable": None},
            "seed_claims": {"band_source": "seed", "layout": None}}),
    9: (10, {"method": {"drop_caches": None}}),  # page caches dropped before each cell (plan.drop_caches)
}


def migrate(stored: dict[str, Any], version: int) -> dict[str, Any]:
    """``stored`` (a plan's JSON dump written in plan format ``version``) in today's format."""
    plan = dict(stored)
    while version < PLAN_FORMAT:
        version, added = MIGRATIONS[version]
        for where, fields in added.items():
            if where == "move":
                plan = _moved(plan, fields)
            elif where == "plan":
                plan = {**fields, **plan}
            elif where == "method" and isinstance(plan.get("method"), dict):
                plan["method"] = {**fields, **plan["method"]}
            elif where == "drop":
                for table, gone in fields.items():
                    if isinstance(plan.get(table), list):
                        plan[table] = [{k: v for k, v in w.items() if k not in gone} if isinstance(w, dict) else w
                                       for w in plan[table]]
            elif where == "targets":
                plan = _targets_with(plan, fields)
            elif where in ("workloads", "configurations", "seed_findings") and isinstance(plan.get(where), list):
                plan[where] = [{**fields, **w} if isinstance(w, dict) else w for w in plan[where]]
            elif where == "seed_claims" and isinstance(plan.get("seed_findings"), list):
                plan["seed_findings"] = [
                    {**f, "claims": [{**fields, **c} if isinstance(c, dict) else c for c in f["claims"]]}
                    if isinstance(f, dict) and isinstance(f.get("claims"), list) else f
                    for f in plan["seed_findings"]]
    return plan


def _targets_with(plan: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """``plan`` with ``fields`` added to every target table: [targets] entries and inline configuration targets."""
    plan = dict(plan)
    if isinstance(plan.get("targets"), dict):
        plan["targets"] = {k: {**fields, **t} if isinstance(t, dict) else t for k, t in plan["targets"].items()}
    if isinstance(plan.get("configurations"), list):
        plan["configurations"] = [{**c, "target": {**fields, **c["target"]}}
                                  if isinstance(c, dict) and isinstance(c.get("target"), dict) else c
                                  for c in plan["configurations"]]
    return plan


def _moved(plan: dict[str, Any], moves: dict[str, str]) -> dict[str, Any]:
    """``plan`` with each 'table.field' moved to its new 'table.field' (a table made when needed; a field that
    holds nothing is dropped, as today's dump of an empty stage is None)."""
    for old, new in moves.items():
        (ot, of), (nt, nf) = old.split("."), new.split(".")
        src = plan.get(ot)
        if not isinstance(src, dict) or of not in src:
            continue
        src = dict(src)
        value = src.pop(of)
        plan = {**plan, ot: src}
        if value is not None:
            dst = plan.get(nt) if isinstance(plan.get(nt), dict) else {"age": None}
            plan = {**plan, nt: {**dst, nf: value}}
        elif isinstance(plan.get(nt), dict):
            plan = {**plan, nt: {"fill": None, **plan[nt]}}
    return plan
