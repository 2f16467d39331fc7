"""A target's kernel attach on the user's hosts (`attach = { iscsi | nfs | nvme-tcp | smb = {…} }`): the one owner
of its grammar.

Every value is data, checked here before anything is built from it: host names and addresses, ports, the IQN and
NQN grammars (plan.protocols.IQN, vm.kernelpaths' NQN rule), an export path of plain characters, numbers in
range. No value may hold a space, a quote, a ';', a newline or a leading '-', so none can become a second word or
an option in a command, local or over ssh.

    [targets.array]
    attach = { iscsi = { portal = "10.1.2.3:3260", iqn = "iqn.2001-05.com.example:array", lun = 0, sessions = 4 } }
    allow_overwrite = true

    [targets.filer]
    attach = { nfs = { server = "10.1.2.4", export = "/vol/bench", version = "4.1", nconnect = 4 } }

    [targets.flash]
    attach = { nvme-tcp = { address = "10.1.2.5", nqn = "nqn.2014-08.org.example:flash", queues = 2 } }

    [targets.share]    # the user name and password: in a root-only file on each host, never in the plan
    attach = { smb = { server = "10.1.2.6", share = "bench", credentials = "/root/smb.cred", options = ["seal"] } }
"""

from __future__ import annotations

import re
from ipaddress import ip_address
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..conventions import digits
from .protocols import EXPORT, IQN, NQN, NQN_MAX, PROTOCOLS

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*")
_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
MAX_SESSIONS = 16
MAX_NCONNECT = 16  # Linux's NFS client takes at most 16 connections per server
MAX_QUEUES = 128
RW_SIZES = tuple(2**k for k in range(12, 21))  # rsize/wsize: 4 KiB to 1 MiB, powers of two (the client rounds)
NFS_VERSIONS = ("3", "4.0", "4.1", "4.2")
#: SMB3 dialects as the kernel's vers= takes them ("3": the highest both sides have)
SMB_VERSIONS = ("3.1.1", "3.02", "3.0", "3")
#: the kernel's cifs options a plan may add (an attach's, a load guest's): flags, and options with a number; protolab
#: sets the credentials, user, password, vers and cache itself
CIFS_FLAGS = frozenset({"seal", "sign", "nosharesock", "nostrictsync", "nohandlecache", "multichannel", "nobrl",
                        "hard", "soft", "noserverino"})
CIFS_NUMBERS = frozenset({"rsize", "wsize", "bsize", "max_credits", "echo_interval", "actimeo", "max_channels",
                          "handletimeout", "esize"})
_SHARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}\$?")  # "$": a hidden share


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def check_host(value: Any, field: str) -> str:
    """A host name or an IP address (IPv6 in brackets is not needed here: a bare one is accepted)."""
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a host name or an address, in quotes")
    try:
        address = ip_address(value)
    except ValueError:
        address = None
    if address is not None and "%" not in value:  # an IPv6 scope ("%eth0") is free text: not taken
        return str(address)
    if len(value) > 253 or not _HOST.fullmatch(value):
        raise ValueError(f"{field} {value!r} is not a host name or an IP address (letters, digits, '-' and '.')")
    return value


def check_port(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"{field} {value!r} is not a TCP port; give a number from 1 to 65535")
    return value


def check_iqn(value: Any, field: str = "iqn") -> str:
    if not isinstance(value, str) or not IQN.fullmatch(value):
        raise ValueError(f"{field} {value!r} is not an iSCSI name; write iqn.YYYY-MM.reversed.domain:name "
                         "(letters, digits, '.', '-', '_', ':')")
    return value


def check_file_name(value: Any) -> str:
    """A data file's plain name in a mounted share or export."""
    if not isinstance(value, str) or not _FILE.fullmatch(value):
        raise ValueError(f"file {value!r} is not a plain file name (letters, digits, '_', '.', '-'; no '/')")
    return value


def check_nqn(value: Any, field: str = "nqn") -> str:
    if not isinstance(value, str) or len(value) > NQN_MAX or not NQN.fullmatch(value):
        raise ValueError(f"{field} {value!r} is not an NVMe qualified name; write nqn.YYYY-MM.reversed.domain:name "
                         f"(letters, digits, '.', '-', '_', ':'; at most {NQN_MAX} characters)")
    return value


class IscsiAttach(_Model):
    """iSCSI: log in to the target IQN at the portal, ``sessions`` sessions; the LUN's disk is the target."""

    portal: str = Field(description="HOST or HOST:PORT of the target portal (port 3260 by default)")
    iqn: str = Field(description="the target's IQN")
    lun: int = Field(default=0, ge=0, le=16383)
    sessions: int = Field(default=1, ge=1, le=MAX_SESSIONS, description="sessions per host to the target")

    @field_validator("portal", mode="before")
    @classmethod
    def _portal(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("portal must be HOST or HOST:PORT, in quotes")
        host, port = _split_portal(v)
        check_host(host, "portal host")
        if port is not None:
            check_port(int(port) if digits(port) and len(port) <= 5 else -1, "portal port")
        return v

    @field_validator("iqn", mode="before")
    @classmethod
    def _iqn(cls, v: Any) -> str:
        return check_iqn(v)

    @property
    def host(self) -> str:
        return _split_portal(self.portal)[0]

    @property
    def reach(self) -> str:
        """The host the attach reaches."""
        return self.host

    def describe(self) -> str:
        return f"iSCSI {self.iqn} LUN {self.lun} at {self.host}:{self.port}, {self.sessions} session(s) per host"

    @property
    def port(self) -> int:
        port = _split_portal(self.portal)[1]
        return int(port) if port is not None else PROTOCOLS["iscsi"].port


def _split_portal(portal: str) -> tuple[str, str | None]:
    """HOST[:PORT] → (HOST, PORT or None); a bare IPv6 address (several ':') has no port."""
    host, _, port = portal.rpartition(":")
    return (host, port) if portal.count(":") == 1 else (portal, None)


class NfsMount(_Model):
    """How a kernel's NFS client mounts an export: version, TCP connections, bytes per READ and WRITE (attached
    targets; and the load guests of the lab's knfsd, a configuration's ``nfs``)."""

    version: Literal["3", "4.0", "4.1", "4.2"] = "4.1"
    nconnect: int = Field(default=1, ge=1, le=MAX_NCONNECT, description="TCP connections to the server")
    rsize: int | None = Field(default=None, description="bytes per READ (4096-1048576, a power of two)")
    wsize: int | None = Field(default=None, description="bytes per WRITE (4096-1048576, a power of two)")

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"version {v!r}: give one of {', '.join(NFS_VERSIONS)}")
        text = {3: "3", 4: "4.0", "4": "4.0", 4.1: "4.1", 4.2: "4.2"}.get(v, v)
        if text not in NFS_VERSIONS:
            raise ValueError(f"version {v!r}: give one of {', '.join(NFS_VERSIONS)}")
        return text

    @field_validator("rsize", "wsize", mode="before")
    @classmethod
    def _size(cls, v: Any, info) -> int | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v not in RW_SIZES:
            raise ValueError(f"{info.field_name} {v!r}: give a power of two from 4096 to 1048576 bytes")
        return v

    def options(self) -> str:
        """The mount options protolab asks for (mount -o), in a fixed order."""
        opts = [f"vers={self.version}", f"nconnect={self.nconnect}"]
        opts += [f"{k}={v}" for k, v in (("rsize", self.rsize), ("wsize", self.wsize)) if v is not None]
        return ",".join(opts)


class NfsAttach(NfsMount):
    """NFS: mount the export (version, nconnect, rsize/wsize); the target is ``file`` in the mount."""

    server: str
    export: str = Field(description="the export's path on the server, e.g. /vol/bench")
    file: str = Field(default="protolab.dat", description="the data file in the export (a plain name)")

    @field_validator("server", mode="before")
    @classmethod
    def _server(cls, v: Any) -> str:
        return check_host(v, "server")

    @field_validator("export", mode="before")
    @classmethod
    def _export(cls, v: Any) -> str:
        if not isinstance(v, str) or not v.startswith("/") or not EXPORT.fullmatch(v) \
                or {".", ".."} & set(v.split("/")):
            raise ValueError(f"export {v!r} is not an export path; write /path/of/export (letters, digits, "
                             "'_', '.', '+', '-' and '/'; no '..')")
        return v

    @field_validator("file", mode="before")
    @classmethod
    def _file(cls, v: Any) -> str:
        return check_file_name(v)

    @property
    def reach(self) -> str:
        """The host the attach reaches."""
        return self.server

    def describe(self) -> str:
        return f"NFS {self.server}:{self.export} ({self.options()}), file {self.file}"


class NvmeTcpAttach(_Model):
    """NVMe/TCP: connect to the subsystem at the address (I/O queues); namespace ``nsid``'s disk is the target."""

    address: str
    port: int = PROTOCOLS["nvme-tcp"].port
    nqn: str = Field(description="the subsystem's NQN")
    nsid: int = Field(default=1, ge=1, le=0xFFFFFFFE)
    queues: int | None = Field(default=None, ge=1, le=MAX_QUEUES, description="I/O queues (default: the kernel's)")

    @field_validator("address", mode="before")
    @classmethod
    def _address(cls, v: Any) -> str:
        return check_host(v, "address")

    @property
    def reach(self) -> str:
        """The host the attach reaches."""
        return self.address

    def describe(self) -> str:
        return (f"NVMe/TCP {self.nqn} namespace {self.nsid} at {self.address}:{self.port}"
                + (f", {self.queues} I/O queue(s)" if self.queues else ""))

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, v: Any) -> int:
        return check_port(v, "port")

    @field_validator("nqn", mode="before")
    @classmethod
    def _nqn(cls, v: Any) -> str:
        return check_nqn(v)


def check_cifs_option(option: Any) -> str:
    """One cifs mount option a plan may give: a flag of CIFS_FLAGS, or NAME=NUMBER of CIFS_NUMBERS."""
    key, eq, value = option.partition("=") if isinstance(option, str) else ("", "", "")
    if (not eq and key in CIFS_FLAGS) or (eq and key in CIFS_NUMBERS and digits(value) and len(value) <= 10):
        return option
    raise ValueError(f"CIFS mount option {option!r}: give one of {', '.join(sorted(CIFS_FLAGS))}, or "
                     f"{', '.join(sorted(CIFS_NUMBERS))} with a number (protolab sets ip, credentials, username, "
                     "password, vers and cache itself)")


class SmbAttach(_Model):
    """SMB3: mount the share with the kernel's CIFS client (mount.cifs), logging in with the user name and password
    of ``credentials``, a root-only file on each host; the target is ``file`` in the mount."""

    server: str
    share: str = Field(description="the share's name on the server, e.g. bench")
    credentials: str = Field(description="a root-only file on each host (its absolute path): mount.cifs's username= "
                                         "and password= lines")
    version: Literal["3.1.1", "3.02", "3.0", "3"] = "3.1.1"
    options: tuple[str, ...] = Field(default=(), description="further cifs mount options, e.g. [\"seal\"]")
    file: str = Field(default="protolab.dat", description="the data file in the share (a plain name)")

    @model_validator(mode="before")
    @classmethod
    def _no_secret(cls, v: Any) -> Any:
        given = sorted({"username", "user", "password", "pass", "domain"} & set(v)) if isinstance(v, dict) else []
        if given:
            raise ValueError(f"{given[0]}: a plan holds no user name or password; write username= and password= "
                             "lines in a root-only file (mode 0600) on each host and give its path as credentials")
        return v

    @field_validator("server", mode="before")
    @classmethod
    def _server(cls, v: Any) -> str:
        return check_host(v, "server")

    @field_validator("share", mode="before")
    @classmethod
    def _share(cls, v: Any) -> str:
        if not isinstance(v, str) or not _SHARE.fullmatch(v):
            raise ValueError(f"share {v!r} is not a share name (letters, digits, '_', '.', '-'; a '$' at the end)")
        return v

    @field_validator("credentials", mode="before")
    @classmethod
    def _credentials(cls, v: Any) -> str:
        if not isinstance(v, str) or not v.startswith("/") or v.endswith("/") or not EXPORT.fullmatch(v) \
                or {"", ".", ".."} & set(v[1:].split("/")):
            raise ValueError(f"credentials {v!r} is not a file's absolute path on the hosts; write /path/of/file "
                             "(letters, digits, '_', '.', '+', '-' and '/'; no '.' or '..' step)")
        return v

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> str:
        if v not in SMB_VERSIONS or not isinstance(v, str):  # 3.0 and 3.02 as TOML numbers would lose their text
            raise ValueError(f"version {v!r}: give one of {', '.join(SMB_VERSIONS)}, in quotes")
        return v

    @field_validator("options", mode="before")
    @classmethod
    def _options(cls, v: Any) -> tuple[str, ...]:
        if not isinstance(v, (list, tuple)):
            raise ValueError('options must be a list of cifs mount options, e.g. ["seal", "rsize=1048576"]')
        return tuple(check_cifs_option(o) for o in v)

    @field_validator("file", mode="before")
    @classmethod
    def _file(cls, v: Any) -> str:
        return check_file_name(v)

    @property
    def unc(self) -> str:
        """//SERVER/SHARE, as mount.cifs and /proc/mounts write it."""
        return f"//{self.server}/{self.share}"

    def mount_options(self) -> str:
        """The mount options protolab asks for besides the credentials (mount -o), in a fixed order."""
        return ",".join([f"vers={self.version}", "cache=none", *self.options])

    @property
    def reach(self) -> str:
        """The host the attach reaches."""
        return self.server

    def describe(self) -> str:
        return f"SMB {self.unc} ({self.mount_options()}), credentials {self.credentials}, file {self.file}"


class Attach(_Model):
    """Exactly one of iscsi, nfs, nvme-tcp, smb."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    iscsi: IscsiAttach | None = None
    nfs: NfsAttach | None = None
    nvme_tcp: NvmeTcpAttach | None = Field(default=None, alias="nvme-tcp")
    smb: SmbAttach | None = None

    @model_validator(mode="after")
    def _one(self) -> "Attach":
        given = [k for k, v in self if v is not None]
        if len(given) != 1:
            names = _names()
            raise ValueError(f"give exactly one of {', '.join(names[:-1])} or {names[-1]}, e.g. "
                             "attach = { nfs = { server = \"10.1.2.4\", export = \"/vol/bench\" } }")
        return self

    @property
    def protocol(self) -> str:
        """The protocol attached: the field given, by the name a plan writes."""
        return next(f.alias or name for name, f in type(self).model_fields.items() if getattr(self, name) is not None)

    @property
    def spec(self) -> IscsiAttach | NfsAttach | NvmeTcpAttach | SmbAttach:
        spec = next(v for _, v in self if v is not None)
        return spec

    @property
    def address(self) -> str:
        """The host the attach reaches: the iSCSI portal's, the NFS or SMB server, the NVMe/TCP address."""
        return self.spec.reach

    def describe(self) -> str:
        """One line for `validate`, the report and the run directory."""
        return self.spec.describe()


def _names() -> list[str]:
    return [f.alias or name for name, f in Attach.model_fields.items()]


ATTACH_PREFIX = "attach:"
#: the protocols a target can be attached by: Attach's fields, by the names a plan writes
ATTACH_PROTOCOLS = tuple(f.alias or name for name, f in Attach.model_fields.items())


def attach_url(attach: Attach) -> str:
    """The target string of an attached target: attach:PROTOCOL (its device is known only once attached)."""
    return f"{ATTACH_PREFIX}{attach.protocol}"
