"""Every protocol once: its name, target grammar, default port, the lab server that serves it, the fio engine
that reaches it, whether QEMU attaches it, and which wire model counts its bytes.

Everything else asks this registry: target parsing (plan.target_grammar), the lab's exports and access lists
(plan.topology, lab.lab), preflight's engine checks, QEMU's disks (vm.qemu), fio's needed engines, the wire
model and `protolab limits` (analysis.wire, analysis.limits), and the report's ceilings.

Adding a protocol is one `Protocol` here (with its URL parser when it has a URL form) and, when it has a
wire, its frames in analysis.wire's per-model functions (`wire_model` names them) — nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable
from urllib.parse import SplitResult

from ..conventions import digits

#: an iSCSI name (RFC 3720 3.2.6: iqn., eui. or naa.), as protolab accepts it anywhere (match it whole)
IQN = re.compile(r"(iqn|eui|naa)\.[A-Za-z0-9.:_-]{1,220}")
#: NVMe base spec 4.5: "nqn." + yyyy-mm + "." + reversed domain, then ":" and a name; 223 bytes at most
NQN = re.compile(r"nqn\.[0-9]{4}-[0-9]{2}\.[a-z0-9][a-z0-9.-]*(:[A-Za-z0-9._-]+)*")
NQN_MAX = 223
#: an export path's characters (NFS and NBD URLs, attach tables): no space, quote, ';', ',' or control character
EXPORT = re.compile(r"[A-Za-z0-9_./+-]{1,1024}")


@dataclass(frozen=True)
class TargetRef:
    """A parsed target: its kind and the parts fio and the lab need."""

    kind: str  # path | lab | a protocol's name (iscsi, nfs, nbd …)
    text: str
    host: str | None = None
    port: int | None = None
    iqn: str | None = None
    lun: int | None = None
    export: str | None = None
    lab: str | None = None  # the lab protocol of a lab: target
    attached: str | None = None  # the protocol of a target protolab attaches on the hosts (attach:PROTOCOL)

    @property
    def is_lab(self) -> bool:
        """True for lab:PROTOCOL."""
        return self.kind == "lab"

    @property
    def protocol(self) -> str | None:
        """The protocol that reaches the target: 'iscsi' for iscsi://… and lab:iscsi, 'local' for lab:local,
        None for a path (no protocol between load and storage)."""
        if self.kind == "attach":
            return self.attached
        return self.lab if self.kind == "lab" else (self.kind if self.kind in PROTOCOLS else None)

    @property
    def wired(self) -> bool:
        """True when a network protocol lies between load and storage (the wire model applies)."""
        p = PROTOCOLS.get(self.protocol or "")
        return bool(p and p.tcp)


UrlParser = Callable[[str, SplitResult, str, "int | None"], TargetRef]


@dataclass(frozen=True)
class Dissector:
    """How Wireshark's own dissector matches the protocol's requests to their replies (method.breakdown; the capture
    and tshark: telemetry.capture): the field its replies carry, the time since their request, in Wireshark's
    words, a display filter keeping the replies of the protocol's commands, and the server's TCP port the capture
    keeps."""

    time_field: str
    replies: str
    port: int


@dataclass(frozen=True)
class Protocol:
    """One protocol and everything protolab knows of it."""

    name: str
    title: str  # in sentences and tables: "iSCSI"
    form: str | None = None  # the URL form shown in errors; None: no URL of its own
    port: int | None = None  # the default port
    parse: UrlParser | None = None  # parses its URL (the scheme is its name)
    server: str | None = None  # the lab's userspace server for it (None: not served by the lab)
    lab: bool = False  # a lab target (lab:NAME)
    engine: str | None = None  # the fio engine that reaches its URL (None: fio's file engines)
    qemu: bool = False  # QEMU attaches its URL as a guest disk
    tcp: bool = False  # it runs over TCP/IP: links, MTU and the wire model apply
    wire_model: str | None = None  # analysis.wire's model of its frames (None: no wire)
    modelled_only: bool = False  # in the wire model only: the lab cannot run it (FC, FCoE)
    fc_link: bool = False  # it needs an FC link, not Ethernet
    min_mtu: int | None = None  # the smallest Ethernet MTU it fits in
    own_file: bool = False  # protolab writes only its own file there (an NFS export): no overwrite opt-in needed
    qemu_module: str | None = None  # QEMU's loadable block driver for its URLs (None: built in)
    no_replay: str = ""  # why fio cannot replay a trace over it ('': it can)
    srt: Dissector | None = None  # tshark's request→reply matching of its commands (None: not captured)


def _iscsi(text: str, parts: SplitResult, host: str, port: int | None) -> TargetRef:
    pieces = parts.path.strip("/").split("/")
    if len(pieces) != 2 or not IQN.fullmatch(pieces[0]) or not digits(pieces[1]) or int(pieces[1]) > 16383:
        raise ValueError(f"target {text!r}: an iSCSI target is {PROTOCOLS['iscsi'].form} "
                         "(an iqn./eui./naa. name and a LUN number from 0 to 16383)")
    return TargetRef("iscsi", text, host, port or PROTOCOLS["iscsi"].port, pieces[0], int(pieces[1]))


def _nfs(text: str, parts: SplitResult, host: str, port: int | None) -> TargetRef:
    export = parts.path
    if not export.strip("/") or not EXPORT.fullmatch(export) or ".." in export.split("/"):
        raise ValueError(f"target {text!r}: an NFS target is {PROTOCOLS['nfs'].form} (an absolute export path)")
    return TargetRef("nfs", text, host, port, export=export)


def _nbd(text: str, parts: SplitResult, host: str, port: int | None) -> TargetRef:
    export = parts.path.lstrip("/")
    if export and not EXPORT.fullmatch(export):
        raise ValueError(f"target {text!r}: an NBD target is {PROTOCOLS['nbd'].form}")
    return TargetRef("nbd", text, host, port or PROTOCOLS["nbd"].port, export=export or None)


#: The registry, in the order protocols are listed to users.
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in [
    Protocol("local", "local block path", lab=True),
    Protocol("iscsi", "iSCSI", "iscsi://HOST[:PORT]/IQN/LUN", 3260, _iscsi, "tgt", True, "libiscsi", True, True,
             "iscsi", qemu_module="block-iscsi",
             # tried: fio 3.33 with --ioengine=libiscsi --read_iolog
             no_replay="fio 3.33's libiscsi engine cannot (it crashes with signal 11)",
             # packet-iscsi.c: iscsi.time on a SCSI Response, and on a Data-In whose S bit carries the status
             srt=Dissector("iscsi.time", "iscsi.time", 3260)),
    Protocol("nfs", "NFS", "nfs://HOST/EXPORT", None, _nfs, "ganesha", True, "nfs", True, True, "nfs",
             own_file=True, qemu_module="block-nfs",
             # packet-rpc.c: rpc.time on a reply; the NFS program's only (not rpcbind's or the mount service's)
             srt=Dissector("rpc.time", "nfs && rpc.time", 2049)),
    Protocol("nbd", "NBD", "nbd://HOST[:PORT][/EXPORT]", 10809, _nbd, "nbdkit", True, "nbd", True, True, "nbd",
             # packet-nbd.c: nbd.time on a reply; in tshark 4.0 (Debian 12) a heuristic dissector, on by default and
             # on any port (no decode-as), of simple replies only: a structured reply (libnbd asks nbdkit for them)
             # is not matched
             srt=Dissector("nbd.time", "nbd.time", 10809)),
    # a kernel data path: nvmet-tcp in the lab's storage server guest, the kernel's nvme-tcp in each load guest
    Protocol("nvme-tcp", "NVMe/TCP", port=4420, server="nvmet", lab=True, tcp=True, wire_model="nvme-tcp"),
    # a file export only the load guests' kernels reach (CIFS): Samba in the storage namespace
    Protocol("smb", "SMB3", port=445, server="samba", lab=True, tcp=True, wire_model="smb", own_file=True),
    Protocol("fc", "Fibre Channel", wire_model="fc", modelled_only=True, fc_link=True),
    Protocol("fcoe", "FCoE", wire_model="fcoe", modelled_only=True, min_mtu=2158),
]}


def lab_targets() -> list[str]:
    """What a lab target may name: lab:local and every protocol the lab serves."""
    return [p.name for p in PROTOCOLS.values() if p.lab]


def exported() -> list[str]:
    """The protocols a lab export is reached with (local needs no export)."""
    return [p.name for p in PROTOCOLS.values() if p.lab and p.server]


def url_schemes() -> list[str]:
    """The protocols written as URLs (iscsi://, nfs://, nbd://)."""
    return [p.name for p in PROTOCOLS.values() if p.parse is not None]


def engines() -> list[str]:
    """The fio engines that reach the protocols' URLs."""
    return [p.engine for p in PROTOCOLS.values() if p.engine]


def modelled() -> list[str]:
    """The protocols the wire model knows (network protocols this machine runs, then the modelled-only ones)."""
    return [p.name for p in PROTOCOLS.values() if p.wire_model]


def qemu_schemes() -> list[str]:
    """The URL schemes QEMU attaches as guest disks."""
    return [p.name for p in PROTOCOLS.values() if p.qemu]


def guest_kernel_only(name: str | None) -> bool:
    """True for a lab protocol that neither fio nor QEMU reaches: only the load guests' kernels attach it."""
    p = PROTOCOLS.get(name or "")
    return p is not None and p.lab and p.server is not None and p.engine is None and not p.qemu


def get(name: str) -> Protocol | None:
    """The protocol called ``name`` (None when there is none)."""
    return PROTOCOLS.get(name)
