"""A load host of real infrastructure: where one fio server runs (the plan's [[hosts]])."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import safety


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LoadHost(_Model):
    """A load host of real infrastructure: where one fio server runs."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    agent: str = Field(
        default="local",
        description="'local', 'ssh://[USER@]HOST[:SSH_PORT]' (fio server started over ssh) or "
                    "'fio://HOST[:PORT]' (already running)",
    )
    fio: str = Field(default="fio", description="fio's path on the remote host (ssh agents)")
    # unused: a fio server started over ssh listens on a Unix socket (engine.sshagent); accepted so that plans
    # that name it still load (a fio:// agent's port is in its URL)
    fio_port: int = Field(default=8765, ge=1, le=65535, description="unused (fio servers started over ssh listen "
                          "on a Unix socket)")
    ssh_options: list[str] = Field(
        default_factory=list,
        description="extra ssh arguments: -p PORT, -i KEY (a key in your ~/.ssh), -o KEY=VALUE (keys that name no "
                    "file and run nothing); an ssh config file only as the operator's PROTOLAB_SSH_CONFIG",
    )

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> str:
        return safety.check_name(v, "host")

    @field_validator("agent")
    @classmethod
    def _agent(cls, v: str) -> str:
        if v == "local":
            return v
        if not v.startswith(("ssh://", "fio://")):
            raise ValueError(f"agent must be 'local', 'ssh://[USER@]HOST' or 'fio://HOST[:PORT]' (got {v!r})")
        from urllib.parse import urlsplit

        try:
            u = urlsplit(v)
            port = u.port
        except ValueError:
            raise ValueError(f"agent {v!r}: the port must be a number from 1 to 65535") from None
        host, user = u.hostname or "", u.username
        if (not _HOST.match(host) or host.startswith("-") or (user is not None and not _USER.match(user))
                or u.password is not None or u.path not in ("", "/") or u.query or u.fragment
                or port == 0):
            raise ValueError(f"agent {v!r} is not of the form ssh://[USER@]HOST[:PORT] or fio://HOST[:PORT] "
                             "(a host name or address, a plain user name)")
        return v

    @field_validator("fio", mode="before")
    @classmethod
    def _fio(cls, v: Any) -> str:
        return safety.check_remote_fio(v)

    @field_validator("ssh_options", mode="before")
    @classmethod
    def _ssh(cls, v: Any) -> list[str]:
        return safety.check_ssh_options(v)


_HOST = re.compile(r"^[A-Za-z0-9_.:-]{1,253}$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
