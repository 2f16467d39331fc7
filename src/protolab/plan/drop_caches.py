"""`[method] drop_caches`: the page caches protolab drops before each cell (`sync; echo 3 >
/proc/sys/vm/drop_caches`), on the load hosts a cell uses and on storage servers the plan names as reachable.

    [method]
    drop_caches = true          # every load host of each cell: the [[hosts]] it uses, or this machine
    # or, also a storage server's own cache (an NFS server reached over ssh as root):
    drop_caches = { servers = [{ name = "filer", ssh = "ssh://root@10.1.2.4" }] }
    # the servers' only:  drop_caches = { hosts = false, servers = [...] }

fio's O_DIRECT keeps its reads off a host's page cache, but not everything honours it: a path read with
direct = false, a mount whose client caches, and the server behind an attached target, whose cache keeps what the
cell before read. A drop before each cell makes every cell start cold, as HCIBench and pbench do; it does not stop
a window from warming the cache itself (a data set that fits in memory is read from it after its first pass).
Each record keeps what each drop did (`CellRecord.caches_dropped`: the host and its Cached before and after).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from . import safety
from .hosts import LoadHost
from .units import format_size

MAX_SERVERS = 16


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class CacheServer(_Model):
    """A storage server whose page cache protolab drops too, reached over ssh (it runs one fixed script there)."""

    name: str = Field(description=safety.NAME_RULE)
    ssh: str = Field(description="ssh://[USER@]HOST[:PORT] (root there: only root may drop the caches)")
    ssh_options: list[str] = Field(default_factory=list, description="as a [[hosts]] entry's ssh_options")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        return safety.check_name(v, "server")

    @model_validator(mode="after")
    def _reachable(self) -> "CacheServer":
        if not isinstance(self.ssh, str) or not self.ssh.startswith("ssh://"):
            raise ValueError(f"ssh {self.ssh!r}: give ssh://[USER@]HOST[:PORT], how protolab reaches the server")
        self.host()  # the [[hosts]] rules for an ssh URL and its options: one line naming what is wrong
        return self

    def host(self) -> LoadHost:
        """The server as a host protolab runs a script on (run.hostshell)."""
        try:
            return LoadHost(name=self.name, agent=self.ssh, ssh_options=self.ssh_options)
        except ValueError as e:  # pydantic's ValidationError: its first message, the field named
            errors = getattr(e, "errors", lambda: [])()
            raise ValueError(errors[0]["msg"].removeprefix("Value error, ") if errors else str(e)) from None


class DropCaches(_Model):
    """Where the page caches are dropped before each cell (see the module's text)."""

    hosts: bool = Field(default=True, description="on the load hosts each cell uses (this machine without [[hosts]])")
    servers: list[CacheServer] = Field(default_factory=list, max_length=MAX_SERVERS,
                                       description="storage servers reached over ssh: [{ name, ssh }]")

    @model_validator(mode="after")
    def _somewhere(self) -> "DropCaches":
        if not self.hosts and not self.servers:
            raise ValueError("drops nowhere: hosts = false and no servers; remove it or name a server")
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError("drop_caches.servers: names must be unique")
        return self

    def summary(self) -> str:
        """'page caches dropped before each cell (the load hosts, filer)'."""
        where = ["the load hosts"] if self.hosts else []
        return f"page caches dropped before each cell ({', '.join([*where, *(s.name for s in self.servers)])})"


def _form(v: Any) -> Any:
    """``true`` is every load host's; ``false`` none; a table says where."""
    if v is True:
        return {}
    if v is False:
        return None
    if v is not None and not isinstance(v, dict):
        raise ValueError("must be true, false or a table { hosts = true, servers = [{ name, ssh }] }")
    return v


#: `Method.drop_caches`'s type: true / false / a table, read as a `DropCaches` or None.
DropCachesField = Annotated[DropCaches | None, BeforeValidator(_form)]


def check_drop_caches(plan: Any) -> str | None:
    """Why ``plan``'s drop_caches cannot be done (one line naming the field), or None."""
    d = plan.method.drop_caches
    if d is None:
        return None
    if plan.hypervisor is not None and d.hosts:
        return ("method.drop_caches: the load guests' own caches are not reached yet, only this machine's; "
                "remove it, or drop on servers alone (drop_caches = { hosts = false, servers = [...] })")
    used = plan.hosts[:max(lp.hosts for lp in plan.load_points)]
    silent = [h.name for h in used if h.agent.startswith("fio://")] if d.hosts else []
    if silent:
        return (f"method.drop_caches: host {silent[0]} is a fio:// agent, which runs no command for protolab; give it "
                "agent = \"ssh://[USER@]HOST\", or drop on servers alone (drop_caches = { hosts = false, servers = "
                "[...] })")
    return None


def cache_warnings(plan: Any, memory_bytes: int | None, target_bytes: Any) -> list[str]:
    """Configurations read through a load host's page cache (direct = false on a path or an attached target) while
    caches are not dropped: their data set fits in this machine's memory (``memory_bytes``), or a remote host's,
    which is not known before the run. ``target_bytes(configuration)``: the bytes its streams share."""
    if plan.method.drop_caches is not None:
        return []
    out = []
    remote = [h.name for h in plan.hosts if h.agent != "local"]
    for c in plan.configurations:
        t = plan.target_of(c)
        if c.direct or t.url.startswith("lab:") or "://" in t.url:  # O_DIRECT; the lab's and fio's own engines
            continue
        size = target_bytes(c)
        fix = "set method.drop_caches = true (each cell then starts cold) or direct = true"
        if remote:
            out.append(f"configuration {c.name!r}: direct = false reads through the page cache of "
                       f"{', '.join(remote)}, whose memory is not known here: a data set of {format_size(size)} that "
                       f"fits in it is read from memory, and a cell reads what the one before left; {fix}")
        elif memory_bytes and size < memory_bytes:
            out.append(f"configuration {c.name!r}: its data set ({format_size(size)}) fits in this machine's memory "
                       f"({format_size(memory_bytes)}) and direct = false reads through its page cache: a cell reads "
                       f"what the one before left there; {fix}")
    return out
