"""The plan's ``[lab]`` table: hosts, storage ports, links, the pool and who may reach which export.

Everything here is data: validated once, frozen, and handed to ``protolab.lab``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from .links import LinkError, parse_link
from .storage import StorageSpec
from .units import parse_size

_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s)\s*$", re.IGNORECASE)
_DELAY_US = {"us": 1, "ms": 1000, "s": 1_000_000}
_PREFIX = re.compile(r"^[a-z][a-z0-9]{0,5}$")


def parse_rate(value: int | str) -> int:
    """Bits per second from "1GbE", "10GbE", "25GbE", "2.5gbit", "500Mbit", "100M" or an int."""
    if isinstance(value, bool):
        raise ValueError(f"rate must be like '1GbE', '10GbE' or '500mbit', got {value!r}")
    if isinstance(value, int) and value <= 0:
        raise ValueError(f"rate must be positive, got {value}")
    try:
        link = parse_link(value)
    except LinkError as e:
        if "at most" in str(e) or "beyond" in str(e):
            raise ValueError(str(e).removeprefix("link: ")) from None
        raise ValueError(
            f"rate must be a preset (1GbE, 10GbE, 25GbE) or a rate like '2.5gbit' or '500mbit', got {value!r}"
        ) from None
    if link.kind != "ethernet":
        raise ValueError(f"rate {value!r} is a Fibre Channel link; a lab link is Ethernet (e.g. '10GbE')")
    bps = link.bps
    if bps < 1000:
        raise ValueError(f"rate {value!r} is below 1 kbit/s; write it like '500mbit'")
    return int(bps)


def parse_delay_us(value: str) -> int:
    """Microseconds from "250us", "1ms", "0.5s"."""
    m = _DELAY.match(str(value))
    if not m:
        raise ValueError(f"delay must be like '250us', '1ms' or '0.1s', got {value!r}")
    return round(float(m.group(1)) * _DELAY_US[m.group(2).lower()])


class LinkSpec(BaseModel):
    """One emulated link: rate (None = unshaped), MTU, one-way delay and loss per direction, offloads."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    rate: str | None = "1GbE"
    mtu: int = 1500
    delay: str | None = None
    loss_pct: float = 0.0
    offloads: bool = True

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> str | None:
        if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "unlimited", "")):
            return None
        bps = parse_rate(v)
        if bps > 400_000_000_000:
            raise ValueError(f"rate must be at most 400Gbit, got {v!r}")
        return str(v).strip()

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, v: int) -> int:
        # veth takes 68..65535; below 576 iSCSI/NFS do not work and 9000 is the usual jumbo frame
        if not 576 <= v <= 65535:
            raise ValueError(f"mtu must be between 576 and 65535 (1500 or 9000 are usual), got {v}")
        return v

    @field_validator("delay", mode="before")
    @classmethod
    def _delay(cls, v: Any) -> str | None:
        if v is None or v == "" or (v == 0 and not isinstance(v, bool)):
            return None
        if not isinstance(v, str):
            raise ValueError(f"delay must be like '250us', '1ms' or '0.1s', got {v!r}")
        if parse_delay_us(v) > 10_000_000:
            raise ValueError(f"delay must be at most 10s, got {v!r}")
        return str(v).strip()

    @field_validator("loss_pct")
    @classmethod
    def _loss(cls, v: float) -> float:
        if not 0.0 <= v <= 100.0:
            raise ValueError(f"loss_pct must be a percentage between 0 and 100, got {v}")
        return v

    @property
    def rate_bps(self) -> int | None:
        """The rate in bits per second, or None when the link is not shaped."""
        return None if self.rate is None else parse_rate(self.rate)

    @property
    def delay_us(self) -> int:
        """The one-way delay each direction of the link adds, in microseconds."""
        return 0 if self.delay is None else parse_delay_us(self.delay)

    def merged(self, overrides: dict[str, Any] | None) -> LinkSpec:
        """This link with a configuration's overrides applied (e.g. ``{"mtu": 9000}``), validated."""
        if not overrides:
            return self
        if not isinstance(overrides, dict):
            raise ValueError("link must be a table of link settings, e.g. link = { mtu = 9000 }")
        unknown = sorted(map(str, set(overrides) - set(type(self).model_fields)))
        if unknown:
            raise ValueError(
                f"unknown link setting(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(type(self).model_fields)}"
            )
        return type(self).model_validate({**self.model_dump(), **overrides})


class ExportAccess(BaseModel):
    """Which load hosts (by number, from 0) an export admits; None means every host."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    hosts: tuple[int, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        # Allow `iscsi = [0, 1]` as well as `iscsi = { hosts = [0, 1] }`.
        if isinstance(v, (list, tuple)):
            return {"hosts": tuple(v)}
        if isinstance(v, dict) and isinstance(v.get("hosts"), list):
            return {**v, "hosts": tuple(v["hosts"])}
        return v

    def admits(self, host: int) -> bool:
        """Whether host number ``host`` is granted."""
        return self.hosts is None or host in self.hosts


class PathSpec(BaseModel):
    """Host NIC ``nic`` (of host ``host``, or of every host when omitted) reaches storage port ``port``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    nic: int = Field(ge=0)
    port: int = Field(ge=0)
    host: int | None = Field(default=None, ge=0)


class LabSpec(BaseModel):
    """The embedded lab: a storage server, load hosts, a switch, links, a pool and its exports."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    prefix: str = "pl"
    hosts: int = 1
    nics_per_host: int = 1
    storage_ports: int = 1
    link: LinkSpec = LinkSpec()
    pool_size: str = "2G"
    export_size: str = "256M"
    cow: bool = False
    exports: dict[str, ExportAccess] = Field(default_factory=dict)
    paths: tuple[PathSpec, ...] = ()
    storage: StorageSpec | None = None  # the pool's device model (plan.storage); None: ram, today's pool

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # a lab without [lab.storage] dumps as before it existed: stored plans compare equal (no format bump)
        out = handler(self)
        if self.storage is None:
            out.pop("storage", None)
        return out

    @property
    def device(self) -> StorageSpec:
        """The pool's device model (ram when the plan has no [lab.storage])."""
        return self.storage if self.storage is not None else StorageSpec()

    @field_validator("exports", mode="before")
    @classmethod
    def _exports(cls, v: Any) -> Any:
        from .protocols import exported

        if isinstance(v, dict):
            unknown = [k for k in v if k not in exported()]
            if unknown:
                raise ValueError(f"unknown export {unknown[0]!r}; a lab export is one of {', '.join(exported())}")
        return v

    @field_validator("paths", mode="before")
    @classmethod
    def _paths(cls, v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not _PREFIX.match(v):
            raise ValueError(
                f"prefix must be 1 to 6 lowercase letters or digits starting with a letter "
                f"(it goes into interface names of at most 15 characters), got {v!r}"
            )
        return v

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, v: int) -> int:
        if not 1 <= v <= 200:
            raise ValueError(f"hosts must be between 1 and 200, got {v}")
        return v

    @field_validator("nics_per_host", "storage_ports")
    @classmethod
    def _ports(cls, v: int, info) -> int:
        if not 1 <= v <= 8:
            raise ValueError(f"{info.field_name} must be between 1 and 8, got {v}")
        return v

    @field_validator("pool_size", "export_size", mode="before")
    @classmethod
    def _size(cls, v: Any, info) -> str:
        try:
            n = parse_size(v)
        except ValueError as e:
            raise ValueError(f"{info.field_name}: {e}") from None
        if n < 16 * 1024**2:
            raise ValueError(f"{info.field_name} must be at least 16M, got {v!r}")
        if n > 1024**5:
            raise ValueError(f"{info.field_name} must be at most 1P, got {v!r}")
        return str(v)

    @model_validator(mode="after")
    def _consistent(self) -> LabSpec:
        for proto, access in self.exports.items():
            for h in access.hosts or ():
                if not 0 <= h < self.hosts:
                    raise ValueError(
                        f"exports.{proto}: host {h} does not exist (hosts are numbered 0 to {self.hosts - 1})"
                    )
        for p in self.paths:
            if p.nic >= self.nics_per_host:
                raise ValueError(f"paths: nic {p.nic} does not exist (nics_per_host = {self.nics_per_host})")
            if p.port >= self.storage_ports:
                raise ValueError(f"paths: port {p.port} does not exist (storage_ports = {self.storage_ports})")
            if p.host is not None and p.host >= self.hosts:
                raise ValueError(f"paths: host {p.host} does not exist (hosts = {self.hosts})")
        # Two NICs of one host on the same storage port would share a subnet and Linux
        # would send both NICs' traffic out of one of them: refuse rather than mislead.
        for h in range(self.hosts):
            seen: dict[int, int] = {}
            for n in range(self.nics_per_host):
                port = self.port_of(h, n)
                if port in seen:
                    raise ValueError(
                        f"host {h}: NICs {seen[port]} and {n} both reach storage port {port}; "
                        f"give each NIC of a host its own port (storage_ports >= nics_per_host, or set paths)"
                    )
                seen[port] = n
        return self

    @property
    def pool_bytes(self) -> int:
        """The pool's size in bytes."""
        return parse_size(self.pool_size)

    @property
    def export_bytes(self) -> int:
        """The size of each export's data object in bytes."""
        return parse_size(self.export_size)

    def port_of(self, host: int, nic: int) -> int:
        """The storage port host ``host``'s NIC ``nic`` reaches (default: nic mod storage_ports)."""
        for p in self.paths:
            if p.nic == nic and p.host == host:
                return p.port
        for p in self.paths:
            if p.nic == nic and p.host is None:
                return p.port
        return nic % self.storage_ports

    def access(self, protocol: str) -> ExportAccess:
        """Who the export of ``protocol`` admits (every host unless the plan says otherwise)."""
        return self.exports.get(protocol, ExportAccess())  # type: ignore[call-overload]
