"""The on-disk record of everything a lab created, so teardown is complete even after a crash.

The record is JSON, rewritten atomically (temp file + rename) after every change.
A resource is added *before* it is created, so a crash between the two leaves an
entry whose undo finds nothing to do, never a resource nobody knows about.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProtolabError

SCHEMA = 1
RECORD_NAME = "lab.json"


@dataclass(frozen=True)
class Resource:
    """One created thing: kind (netns, file, loop, mount, process, tgtd-socket), a name, details."""

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
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ProtolabError(f"no lab is up in {workdir} (no {RECORD_NAME} there)") from None
        except (OSError, ValueError) as e:
            raise ProtolabError(f"{path}: unreadable lab record ({e}); remove the lab with 'protolab lab down --all'") from None
        if data.get("schema") != SCHEMA:
            raise ProtolabError(
                f"{path}: lab record schema {data.get('schema')!r} is not {SCHEMA}; "
                "remove the lab with 'protolab lab down --all'"
            )
        resources = [Resource(r["kind"], r["name"], r.get("extra", {})) for r in data["resources"]]
        return cls(path, data["spec"], data["protocols"], resources, data.get("state", {}))

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
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
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
