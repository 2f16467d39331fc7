"""The on-disk record of everything a lab created, so teardown is complete even after a crash.

The record is JSON, rewritten atomically (temp file + rename) after every change.
A resource is added *before* it is created, so a crash between the two leaves an
entry whose undo finds nothing to do, never a resource nobody knows about.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProtolabError
from ..trust import check_file

SCHEMA = 1
RECORD_NAME = "lab.json"
#: the faults a lab can be left in (lab.fault_controls): a record names them as resources of kind "fault"
FAULTS = ("link-down", "server-down", "stall", "corrupt")


@dataclass(frozen=True)
class Resource:
    """One created thing: kind (netns, file, loop, mount, process, tgtd-socket, fault), a name, details."""

    kind: str
    name: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Record:
    """The lab's record file and its contents."""

    path: Path
    spec: dict[str, Any]
    protocols: list[str]
    resources: list[Resource] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, workdir: Path, spec: dict[str, Any], protocols: list[str]) -> Record:
        """A new, empty record in ``workdir``, written at once."""
        rec = cls(workdir / RECORD_NAME, spec, sorted(protocols))
        rec.save()
        return rec

    @classmethod
    def load(cls, workdir: Path) -> Record:
        """The record in ``workdir``; ProtolabError when there is none or it is unreadable."""
        path = workdir / RECORD_NAME
        if not os.path.lexists(path):
            raise ProtolabError(f"no lab is up in {workdir} (no {RECORD_NAME} there)")
        check_file(path, "lab record")  # root's alone: a record names what teardown removes and kills
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ProtolabError(f"{path}: unreadable lab record ({e}); remove the lab with "
                                "'protolab lab down --all'") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ProtolabError(
                f"{path}: lab record schema {data.get('schema') if isinstance(data, dict) else None!r} "
                f"is not {SCHEMA}; "
                "remove the lab with 'protolab lab down --all'"
            )
        if not isinstance(data, dict) or not isinstance(data.get("resources"), list) \
                or not isinstance(data.get("spec"), dict) or not isinstance(data.get("protocols"), list):
            raise ProtolabError(f"{path}: not a lab record; remove the lab with 'protolab lab down --all'")
        try:
            resources = [Resource(r["kind"], r["name"], dict(r.get("extra", {}))) for r in data["resources"]]
        except (KeyError, TypeError, ValueError):
            raise ProtolabError(f"{path}: a resource is not of the form {{kind, name, extra}}; remove the lab with "
                                "'protolab lab down --all'") from None
        state = data.get("state", {})
        return cls(path, data["spec"], data["protocols"], resources, state if isinstance(state, dict) else {})

    def check_resources(self, workdir: Path, prefix: str) -> None:
        """Refuse (ProtolabError, nothing undone) a record naming anything the lab with ``prefix`` in ``workdir``
        could not have made: teardown removes, unmounts, detaches and kills what a record names."""
        wd = os.path.abspath(workdir)

        def inside(name: str) -> bool:
            path = os.path.normpath(name)
            return os.path.isabs(name) and path == name.rstrip("/") and path.startswith(wd + "/") \
                and os.path.basename(path).startswith(prefix)

        for r in self.resources:
            k, n = r.kind, r.name
            if not isinstance(n, str):
                ok = False
            elif k in ("file", "loop"):
                ok = inside(n)
            elif k == "mount":
                ok = inside(n) or (n.startswith(wd + "/") and inside(os.path.dirname(n)))
            elif k == "dir":
                ok = n.startswith(wd + "/") and os.path.normpath(n) == n and ".." not in n.split("/")
            elif k == "netns":
                ok = n.startswith(f"{prefix}-") and "/" not in n
            elif k == "cgroup":
                ok = os.path.basename(n) in (f"protolab-{prefix}", f"protolab-run-{prefix}") \
                    and n.startswith("/sys/fs/cgroup/") and ".." not in n.split("/")
            elif k == "process":
                ok = isinstance(r.extra.get("pid", 0), int) and isinstance(r.extra.get("started", 0), (int, type(None)))
            elif k == "tgtd-socket":
                ok = isinstance(r.extra.get("port"), int) and n == str(r.extra.get("port"))
            elif k == "fault":  # undone by setting a link up or an attribute of the device model's file: nothing else
                disk = r.extra.get("disk")
                ok = n in FAULTS and (isinstance(r.extra.get("port"), int) if n == "link-down" else
                                      isinstance(disk, str) and inside(disk) if n in ("stall", "corrupt") else True)
            else:
                ok = False
            if not ok:
                raise ProtolabError(f"{self.path}: resource {k} {n!r} is not one this lab (prefix '{prefix}', in "
                                    f"{wd}) could have made; nothing was removed — check the file, remove it by "
                                    "hand if it is not yours, then 'protolab lab down --all'")

    @staticmethod
    def exists(workdir: Path) -> bool:
        """Whether ``workdir`` holds a lab record."""
        return (workdir / RECORD_NAME).exists()

    def save(self) -> None:
        """Write the record atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "schema": SCHEMA,
            "spec": self.spec,
            "protocols": self.protocols,
            "resources": [asdict(r) for r in self.resources],
            "state": self.state,
        }
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{RECORD_NAME}.", suffix=".tmp")  # O_EXCL, 0600
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def add(self, kind: str, name: str, **extra: Any) -> Resource:
        """Record a resource (before creating it) and save."""
        r = Resource(kind, name, extra)
        self.resources.append(r)
        self.save()
        return r

    def update(self, resource: Resource, **extra: Any) -> Resource:
        """Replace ``resource``'s details (e.g. a pid learnt after start) and save."""
        new = Resource(resource.kind, resource.name, {**resource.extra, **extra})
        self.resources[self.resources.index(resource)] = new
        self.save()
        return new

    def drop(self, resource: Resource) -> None:
        """Forget a resource that has been removed, and save."""
        if resource in self.resources:
            self.resources.remove(resource)
            self.save()

    def find(self, kind: str, name: str | None = None) -> list[Resource]:
        """Resources of ``kind`` (and ``name``), in creation order."""
        return [r for r in self.resources if r.kind == kind and (name is None or r.name == name)]

    def set_state(self, **state: Any) -> None:
        """Store lab state (snapshot taken, current link) and save."""
        self.state.update(state)
        self.save()

    def remove_file(self) -> None:
        """Delete the record (after a complete teardown)."""
        self.path.unlink(missing_ok=True)
