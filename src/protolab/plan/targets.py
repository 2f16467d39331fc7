"""Target strings parsed once: a path, iscsi://, nfs://, nbd:// or lab:PROTOCOL (the one owner of that grammar)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

#: What a lab target may name: the pool reached in the storage namespace, or an export.
LAB_TARGETS = ("local", "iscsi", "nfs", "nbd")
ISCSI_PORT = 3260
NBD_PORT = 10809
_IQN = re.compile(r"^(iqn|eui|naa)\.[A-Za-z0-9.:_-]{1,220}$")
_HOST = re.compile(r"^[A-Za-z0-9_.:-]{1,253}$")
_EXPORT = re.compile(r"^[A-Za-z0-9_./+-]{1,1024}$")


@dataclass(frozen=True)
class TargetRef:
    """A parsed target: its kind and the parts fio and the lab need."""

    kind: str  # path | iscsi | nfs | nbd | lab
    text: str
    host: str | None = None
    port: int | None = None
    iqn: str | None = None
    lun: int | None = None
    export: str | None = None
    lab: str | None = None  # the lab protocol of a lab: target

    @property
    def is_lab(self) -> bool:
        """True for lab:PROTOCOL."""
        return self.kind == "lab"


def looks_like_target(text: str) -> bool:
    """True when ``text`` is written as a URL, a lab target or a path (contains '/'), not as a name."""
    return "://" in text or text.startswith("lab:") or "/" in text


def parse_target(text: str) -> TargetRef:
    """Parse a target string; ValueError says what is wrong and how a target of that kind is written."""
    if text.startswith("lab:"):
        proto = text[4:]
        if proto not in LAB_TARGETS:
            raise ValueError(f"unknown lab target {text!r}; use one of "
                             + ", ".join(f"lab:{p}" for p in LAB_TARGETS))
        return TargetRef("lab", text, lab=proto)
    if "://" not in text:
        if not text or "\0" in text:
            raise ValueError("a path target must not be empty")
        if ":" in text:  # fio reads ':' in filename as a list of files: '/a:/etc/x' would write /etc/x too
            raise ValueError(f"target {text!r}: a path must not contain ':' (fio would read it as several "
                             "files); rename the file or link it under a name without ':'")
        return TargetRef("path", text)
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(f"target {text!r}: the port must be a number from 1 to 65535") from None
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if port == 0:
        raise ValueError(f"target {text!r}: the port must be a number from 1 to 65535")
    forms = {"iscsi": "iscsi://HOST[:PORT]/IQN/LUN", "nfs": "nfs://HOST/EXPORT", "nbd": "nbd://HOST[:PORT][/EXPORT]"}
    if scheme not in forms:
        raise ValueError(f"target {text!r}: unknown scheme {scheme!r}; use a path, iscsi://, nfs://, nbd:// "
                         "or lab:PROTOCOL")
    if not _HOST.match(host) or host.startswith("-") or parts.username or parts.password or parts.query \
            or parts.fragment:
        raise ValueError(f"target {text!r}: expected {forms[scheme]} with a host name or address")
    if scheme == "iscsi":
        pieces = parts.path.strip("/").split("/")
        if len(pieces) != 2 or not _IQN.match(pieces[0]) or not pieces[1].isdigit() or int(pieces[1]) > 16383:
            raise ValueError(f"target {text!r}: an iSCSI target is {forms['iscsi']} "
                             "(an iqn./eui./naa. name and a LUN number from 0 to 16383)")
        return TargetRef("iscsi", text, host, port or ISCSI_PORT, pieces[0], int(pieces[1]))
    if scheme == "nfs":
        export = parts.path
        if not export.strip("/") or not _EXPORT.match(export) or ".." in export.split("/"):
            raise ValueError(f"target {text!r}: an NFS target is {forms['nfs']} (an absolute export path)")
        return TargetRef("nfs", text, host, port, export=export)
    export = parts.path.lstrip("/")
    if export and not _EXPORT.match(export):
        raise ValueError(f"target {text!r}: an NBD target is {forms['nbd']}")
    return TargetRef("nbd", text, host, port or NBD_PORT, export=export or None)
