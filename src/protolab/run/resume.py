"""`protolab resume RUN_DIR`: may this run directory be continued here, and with which plan?

A run is resumed only where its numbers stay comparable: the same fio version,
kernel and testbed as its first session, and a plan that still means what it
meant (the stored text, loaded by this protolab, gives the stored model).
Otherwise one line says what differs, unless the user forces it.
"""

from __future__ import annotations

import platform
from typing import Any

from ..errors import ProtolabError
from ..plan.load import load_plan_text
from ..plan.migrate import migrate
from ..plan.model import Plan
from ..results.rundir import RunDir


def resumable(rundir: RunDir, verb: str = "resume") -> tuple[Plan, str, str]:
    """The plan, its text and source stored in ``rundir``; ProtolabError (naming ``verb``, the command) if it
    cannot be resumed at all."""
    m = rundir.manifest()
    where = f"{verb} {rundir.path}"
    if rundir.schema < 2:
        raise ProtolabError(f"{where}: written by an older protolab (schema {rundir.schema}); it can be "
                            "reported and compared, not resumed or detached — run the plan again")
    if m.status == "complete":
        raise ProtolabError(f"{where}: the run is complete (every cell measured, report written); nothing to resume")
    text = m.plan_text
    if not text:
        raise ProtolabError(f"{where}: the manifest holds no plan text; run the plan again")
    source = m.plan_source or "plan"
    scale = (m.plan or {}).get("scale")
    # a run started with --device-model keeps it: the stored plan's [lab.storage] names the preset it ran over
    lab = (m.plan or {}).get("lab")
    stored = lab.get("storage") if isinstance(lab, dict) else None
    model = stored.get("model") if isinstance(stored, dict) and not any(
        v is not None for k, v in stored.items() if k != "model") else None
    return load_plan_text(text, source=f"{source} (stored in {rundir.path.name})", scale=scale,
                          device_model=model), text, source


def differences(rundir: RunDir, plan: Plan, fio_version: str, testbed: dict[str, Any]) -> list[str]:
    """What differs between the run's first session and now, one phrase each."""
    m = rundir.manifest()
    first = m.first_provenance
    out = []
    if first is not None and first.fio_version and first.fio_version != fio_version:
        out.append(f"fio version ({first.fio_version} then, {fio_version} now)")
    if first is not None and first.kernel and first.kernel != platform.release():
        out.append(f"kernel ({first.kernel} then, {platform.release()} now)")
    if first is not None and first.hostname and first.hostname != platform.node():
        out.append(f"machine ({first.hostname} then, {platform.node()} now)")
    if m.plan is not None and migrate(m.plan, m.plan_format) != plan.model_dump(mode="json"):
        out.append("plan (this protolab reads the stored plan text differently)")
    then = m.testbed or {}
    keys = ("kind", "prefix", "hosts", "nics_per_host")
    if then and {k: then.get(k) for k in keys} != {k: testbed.get(k) for k in keys}:
        desc = lambda d: ", ".join(f"{k}={d.get(k)}" for k in keys if d.get(k) is not None)  # noqa: E731
        out.append(f"testbed ({desc(then)} then, {desc(testbed)} now)")
    return out


def check_same(rundir: RunDir, plan: Plan, fio_version: str, testbed: dict[str, Any], force: bool) -> None:
    """Refuse (one line) when anything differs from the first session, unless ``force``."""
    diff = differences(rundir, plan, fio_version, testbed)
    if diff and not force:
        raise ProtolabError(f"resume {rundir.path}: {'; '.join(diff)} differ from the run's first session; "
                            "numbers would not be comparable — use --force to resume anyway")
