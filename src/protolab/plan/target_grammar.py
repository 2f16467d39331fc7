"""Target strings parsed once: a path, iscsi://, nfs://, nbd:// or lab:PROTOCOL (the one owner of that grammar)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .attach import ATTACH_PREFIX, ATTACH_PROTOCOLS
from .protocols import PROTOCOLS, TargetRef, lab_targets, url_schemes

__all__ = ["TargetRef", "is_lab_target", "looks_like_target", "parse_target"]

_HOST = re.compile(r"^[A-Za-z0-9_.:-]{1,253}$")


def is_lab_target(text: str) -> bool:
    """True when ``text`` is written as a lab target (lab:PROTOCOL), whether or not the protocol exists."""
    return text.startswith("lab:")


def protocol_named(text: str) -> str | None:
    """The registered protocol a target string names by its scheme or lab: prefix, without checking the rest
    ('iscsi' for iscsi://… and lab:iscsi; None for a path or an unknown scheme): for reading stored plans."""
    name = text.split("://", 1)[0].lower() if "://" in text else (text[4:] if is_lab_target(text) else None)
    return name if name in PROTOCOLS else None


def looks_like_target(text: str) -> bool:
    """True when ``text`` is written as a URL, a lab target or a path (contains '/'), not as a name."""
    return "://" in text or text.startswith("lab:") or "/" in text


def parse_target(text: str) -> TargetRef:
    """Parse a target string; ValueError says what is wrong and how a target of that kind is written."""
    if text.startswith("lab:"):
        proto = text[4:]
        if proto not in lab_targets():
            raise ValueError(f"unknown lab target {text!r}; use one of "
                             + ", ".join(f"lab:{p}" for p in lab_targets()))
        return TargetRef("lab", text, lab=proto)
    if text.startswith(ATTACH_PREFIX):  # only a target's table with attach = {…} has this url (plan.model)
        proto = text[len(ATTACH_PREFIX):]
        if proto not in ATTACH_PROTOCOLS:
            raise ValueError(f"{text!r}: write attach = {{ iscsi | nfs | nvme-tcp = {{…}} }} in the target's table")
        return TargetRef("attach", text, attached=proto)
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
    if scheme not in url_schemes():
        raise ValueError(f"target {text!r}: unknown scheme {scheme!r}; use a path, "
                         + ", ".join(f"{p}://" for p in url_schemes()) + " or lab:PROTOCOL")
    protocol = PROTOCOLS[scheme]
    if not _HOST.match(host) or host.startswith("-") or parts.username or parts.password or parts.query \
            or parts.fragment:
        raise ValueError(f"target {text!r}: expected {protocol.form} with a host name or address")
    assert protocol.parse is not None
    return protocol.parse(text, parts, host, port)
