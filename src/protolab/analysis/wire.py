"""The wire model: bytes and frames one I/O puts on the wire, and the link's ceiling.

Directions: "to storage" is host -> storage (requests, write data), "to host" is
storage -> host (responses, read data). Links are full duplex; the ceiling is set
by whichever direction needs more bits per I/O.

Sources and what is assumed, once for the whole module:

Ethernet (IEEE 802.3): on the wire every frame costs preamble + SFD 8, MAC header
  14, FCS 4 and the inter-frame gap 12, i.e. 38 B besides its payload, and the
  payload is padded to at least 46 B. Link rates (1GbE …) are MAC data rates, so
  line coding below the MAC (8b/10b, 64b/66b) is already outside them.
IPv4, TCP and Linux's pure ACKs: analysis.wire_tcp (MSS = MTU - 52; each message cut into segments of its
  own, TCP_NODELAY; pure ACKs per burst as captured on the lab, with one I/O in flight and with more: ``oio``).
  WireCost also gives frames per I/O as a range: frames_low, no pure ACK at all, and frames_high, RFC 1122's one
  per two segments with one riding on an answer. Segmentation offloads are ignored: the model counts real frames.
iSCSI (RFC 7143): every PDU has a 48 B Basic Header Segment (§11.2), no AHS for
  CDBs up to 16 B, the data segment padded to 4 B, no header or data digests
  (None is the default, §13.1). Session keys are the RFC's declared defaults
  (§13): MaxRecvDataSegmentLength 8192, FirstBurstLength 65536, MaxBurstLength
  262144, InitialR2T=Yes, ImmediateData=Yes, MaxOutstandingR2T 1 — except the
  initiator's MaxRecvDataSegmentLength, which initiators declare larger (libiscsi
  and QEMU: 262144): reads are Data-In PDUs of <= 262144 B with the status
  collapsed into the last one (S bit, §11.7.1); captured: 64 KiB reads carry
  65,536 + ~96 B of iSCSI per I/O.
  Writes: immediate data (<= 8192 B) in the command PDU, then one R2T per burst
  of <= MaxBurstLength answered by Data-Out PDUs, then a 48 B SCSI Response. libiscsi writes a PDU's header
  and its data segment with two calls: captured, an 8 KiB write's command is a 48 B segment and then the 8,192 B
  of immediate data (one segment at MTU 9000, six at 1500); so are its Data-Out PDUs here.
NFSv3 (RFC 1813) over ONC RPC (RFC 5531): record marking 4 B per message (§11).
  Call header 24 B (xid, msg_type, rpcvers, prog, vers, proc) + credential
  AUTH_UNIX/AUTH_SYS (Appendix A) 8 + 28 B (stamp 4, machine name of 8 chars
  4 + 8, uid 4, gid 4, no supplementary gids 4) + verifier AUTH_NONE 8 B = 68 B.
  Reply header 24 B (xid, msg_type, reply_stat, verifier AUTH_NONE 8, accept_stat).
  File handle 32 B (nfs_fh3 = 4 + 32). fattr3 is 84 B.
  READ3args (§3.3.6) = fh 36 + offset 8 + count 4 = 48 B; READ3res = status 4 +
  post_op_attr 88 + count 4 + eof 4 + data (4 + padded) = 104 B + data.
  WRITE3args (§3.3.7) = fh 36 + offset 8 + count 4 + stable 4 + data (4 + padded)
  = 56 B + data; WRITE3res = status 4 + wcc_data 116 + count 4 + committed 4 +
  verf 8 = 136 B. So READ call 120 B, READ reply 132 B + data, WRITE call
  128 B + data, WRITE reply 164 B. rsize = wsize = 1 MiB; COMMITs are not counted.
NBD (NBD protocol document, "Transmission"): request 28 B (magic 4, flags 2,
  type 2, handle 8, offset 8, length 4), simple reply 16 B (magic 4, error 4,
  handle 8); data follows a write request or a read reply.
NVMe/TCP (NVMe TCP Transport 1.0, §3.6): PDUs start with an 8 B common header; a command capsule is 72 B (+ 64 B
  SQE), a response capsule 24 B, C2HData/H2CData/R2T headers 24 B; no digests, no padding (Linux's defaults).
  Reads: the capsule, then one C2HData PDU with the data and the response capsule behind it (no SUCCESS flag:
  Linux keeps SQ flow control). Writes up to the in-capsule size (nvmet-tcp: 16 KiB) carry their data in the
  capsule; larger ones get one R2T and answer with H2CData PDUs of <= MAXH2CDATA (4 MiB), then the response.
  Linux sends queued PDUs with MSG_MORE, so under load I/Os share segments, as much as timing allows: in a
  Debian 6.1 TCG guest (loopback, MTU 1500/9000, offloads off, OIO 4; tests/data/wire-capture-nvme-tcp.json)
  4 KiB reads took 3.7-4.1 frames per I/O in three captures, against 4.6 per message (5.0 one at a time). So frames_low
  is the fully merged stream (bytes / MSS, no pure ACK) and the capture lies in the range; bytes match within
  2.5 %, frames within 10 % from 64 KiB up.
Fibre Channel (FC-FS; FCP-4), modelled only: a frame is SOF 4 + header 24 +
  payload (<= 2112; 2048 B of data per frame, the usual negotiated receive data
  field, padded to 4) + CRC 4 + EOF 4, and at least six primitive signals (idles,
  24 B) separate frames. Class 3: no link-level ACKs; R_RDY replaces an idle, so
  buffer-to-buffer credit costs no bandwidth. FCP_CMND payload 32 B, FCP_RSP 24 B
  (good status, no sense), FCP_XFER_RDY 12 B, one per write (a burst covers the
  I/O), no first burst. Line rates: 4GFC 4.25 GBd and 8GFC 8.5 GBd with 8b/10b
  (10 line bits per byte), 16GFC 14.025 GBd and 32GFC 28.05 GBd with 64b/66b.
  (32GFC really uses 256b/257b + RS-FEC at 28.05 GBd: 27.20 Gbit/s, the same as
  64b/66b to 0.1 %.) The quoted 400/800/1600/3200 MB/s are these after framing.
FCoE (FC-BB-5), modelled only: each FC frame rides in one Ethernet frame:
  preamble 8 + MACs 12 + 802.1Q tag 4 (FCoE runs on a priority VLAN) + EtherType
  2 + FCoE header 14 (version, reserved, SOF) + FC header 24 + payload + CRC 4 +
  EOF and reserved 4 + FCS 4 + IFG 12 = 88 B + payload. The Ethernet payload is
  46 B + FC payload, so the full 2112 B frame needs an MTU of 2158 ("baby
  jumbo"); smaller MTUs are refused. Lossless (PFC), no ACKs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from protolab.analysis import wire_smb
from protolab.analysis.wire_tcp import (  # noqa: F401 (re-exported)
    ETH_FCS,
    ETH_HEADER,
    ETH_IFG,
    ETH_MIN_PAYLOAD,
    ETH_OVERHEAD,
    ETH_PREAMBLE_SFD,
    IPV4_HEADER,
    TCP_HEADER,
    TCP_IP_HEADERS,
    TCP_TIMESTAMPS,
    TO_HOST,
    TO_STORAGE,
    Tally,
    pure_acks,
    tcp,
)
from protolab.errors import ProtolabError
from protolab.plan.protocols import PROTOCOLS as REGISTRY  # noqa: E402
from protolab.plan.protocols import modelled


def modelled_only() -> list[str]:
    """The protocols in the wire model only: this machine cannot run them (plan.protocols)."""
    return [p for p in modelled() if REGISTRY[p].modelled_only]

# iSCSI (RFC 7143)
ISCSI_BHS = 48
ISCSI_MAX_RECV_DATA_SEGMENT = 8192  # the target's: Data-Out and immediate data
ISCSI_INITIATOR_MAX_RECV_DATA_SEGMENT = 262144  # the initiator's (libiscsi's declaration): Data-In
ISCSI_FIRST_BURST, ISCSI_MAX_BURST = 65536, 262144
# NFSv3 / RPC (RFC 1813, RFC 5531)
RPC_RECORD_MARK, RPC_CALL_HEADER, RPC_REPLY_HEADER = 4, 68, 24
NFS_READ_ARGS, NFS_READ_RES, NFS_WRITE_ARGS, NFS_WRITE_RES = 48, 104, 56, 136
NFS_MAX_IO = 1 << 20
NBD_REQUEST, NBD_SIMPLE_REPLY = 28, 16  # NBD
# NVMe/TCP (NVMe TCP transport 1.0; Linux nvmet-tcp's defaults)
NVME_TCP_CAPSULE_CMD, NVME_TCP_CAPSULE_RESP, NVME_TCP_DATA_HEADER, NVME_TCP_R2T = 72, 24, 24, 24
NVME_TCP_INLINE_DATA, NVME_TCP_MAXH2CDATA = 16384, 4 << 20
# Fibre Channel (FC-FS, FCP-4)
FC_SOF, FC_HEADER, FC_CRC, FC_EOF, FC_IDLES = 4, 24, 4, 4, 24
FC_FRAME_OVERHEAD = FC_SOF + FC_HEADER + FC_CRC + FC_EOF  # 36
FC_MAX_DATA_FIELD, FC_DATA_PER_FRAME = 2112, 2048
FCP_CMND, FCP_RSP, FCP_XFER_RDY = 32, 24, 12
# FCoE (FC-BB-5): bytes around the FC header + payload + CRC on the wire
FCOE_WIRE_OVERHEAD = ETH_PREAMBLE_SFD + 12 + 4 + 2 + 14 + FC_HEADER + FC_CRC + 4 + ETH_FCS + ETH_IFG  # 88
FCOE_ETH_PAYLOAD_OVERHEAD = 14 + FC_HEADER + FC_CRC + 4  # 46: counts against the MTU
FCOE_MIN_MTU = FCOE_ETH_PAYLOAD_OVERHEAD + FC_MAX_DATA_FIELD  # 2158

from ..plan.links import LINK_PRESETS, LINKS, Link, parse_link, parse_rate  # noqa: E402,F401 (re-exported)


@dataclass(frozen=True)
class WireCost:
    """Expected frames and bytes per I/O in each direction (fractional for mixes)."""

    protocol: str
    mtu: int | None  # None for native FC, which has no MTU
    payload_bytes: float  # user data per I/O
    read_pct: float
    max_payload_per_frame: int  # TCP MSS, or FC data field per frame
    frames_to_storage: float
    frames_to_host: float
    bytes_to_storage: float  # on the wire, all framing, preamble and gaps included
    bytes_to_host: float
    counted_bytes_to_storage: float  # as interface counters see it: Ethernet header + IP packet
    counted_bytes_to_host: float  # (for FC: SOF..EOF, without idles)
    modelled_only: bool
    frames_low: float = 0.0  # both directions, no pure ACK at all (every ACK rides on data)
    frames_high: float = 0.0  # both directions, RFC 1122's one ACK per two segments

    @property
    def frames(self) -> float:
        """Frames per I/O in both directions: the model's expectation."""
        return self.frames_to_storage + self.frames_to_host


@dataclass(frozen=True)
class Ceiling:
    """The most I/O the link can carry for this access spec, and which direction limits it."""

    protocol: str
    link: str
    link_bps: float
    iops: float
    mbps: float  # MB/s of user data, 1 MB = 1e6 B
    bottleneck_direction: str  # "to host" or "to storage"
    wire_cost: WireCost
    modelled_only: bool


def _pad4(n: int) -> int:
    return (n + 3) // 4 * 4


def _iscsi_bursts(size: int, read: bool) -> list[tuple[int, int]]:
    def pdus(data: int, segment: int = ISCSI_MAX_RECV_DATA_SEGMENT) -> list[int]:
        """Bytes of the Data-In PDUs that carry `data` bytes in segments of at most `segment`."""
        full, rest = divmod(data, segment)
        return [ISCSI_BHS + segment] * full + ([ISCSI_BHS + _pad4(rest)] if rest else [])

    if read:
        return [(TO_STORAGE, ISCSI_BHS), (TO_HOST, sum(pdus(size, ISCSI_INITIATOR_MAX_RECV_DATA_SEGMENT)))]
    # libiscsi writes each PDU's header and its data segment with two calls (see the module docstring)
    immediate = min(size, ISCSI_FIRST_BURST, ISCSI_MAX_RECV_DATA_SEGMENT)
    bursts = [(TO_STORAGE, ISCSI_BHS), (TO_STORAGE, _pad4(immediate))]
    left = size - immediate
    while left > 0:  # InitialR2T=Yes: the rest is solicited, one R2T per burst
        burst = min(left, ISCSI_MAX_BURST)
        bursts.append((TO_HOST, ISCSI_BHS))
        bursts += [m for pdu in pdus(burst) for m in ((TO_STORAGE, ISCSI_BHS), (TO_STORAGE, pdu - ISCSI_BHS))]
        left -= burst
    return bursts + [(TO_HOST, ISCSI_BHS)]


def _nfs_bursts(size: int, read: bool) -> list[tuple[int, int]]:
    bursts = []
    for offset in range(0, size, NFS_MAX_IO):
        chunk = min(NFS_MAX_IO, size - offset)
        if read:
            bursts += [(TO_STORAGE, RPC_RECORD_MARK + RPC_CALL_HEADER + NFS_READ_ARGS),
                       (TO_HOST, RPC_RECORD_MARK + RPC_REPLY_HEADER + NFS_READ_RES + _pad4(chunk))]
        else:
            bursts += [(TO_STORAGE, RPC_RECORD_MARK + RPC_CALL_HEADER + NFS_WRITE_ARGS + _pad4(chunk)),
                       (TO_HOST, RPC_RECORD_MARK + RPC_REPLY_HEADER + NFS_WRITE_RES)]
    return bursts


def _nbd_bursts(size: int, read: bool) -> list[tuple[int, int]]:
    if read:
        return [(TO_STORAGE, NBD_REQUEST), (TO_HOST, NBD_SIMPLE_REPLY + size)]
    return [(TO_STORAGE, NBD_REQUEST + size), (TO_HOST, NBD_SIMPLE_REPLY)]


def _nvme_tcp_bursts(size: int, read: bool) -> list[tuple[int, int]]:
    if read:  # C2HData with the data, the response capsule right behind it
        return [(TO_STORAGE, NVME_TCP_CAPSULE_CMD), (TO_HOST, NVME_TCP_DATA_HEADER + size + NVME_TCP_CAPSULE_RESP)]
    if size <= NVME_TCP_INLINE_DATA:  # in-capsule data
        return [(TO_STORAGE, NVME_TCP_CAPSULE_CMD + size), (TO_HOST, NVME_TCP_CAPSULE_RESP)]
    pdus = math.ceil(size / NVME_TCP_MAXH2CDATA)
    return [(TO_STORAGE, NVME_TCP_CAPSULE_CMD), (TO_HOST, NVME_TCP_R2T),
            (TO_STORAGE, pdus * NVME_TCP_DATA_HEADER + size), (TO_HOST, NVME_TCP_CAPSULE_RESP)]


def _fcp_frames(size: int, read: bool, data_per_frame: int) -> list[tuple[int, int]]:
    """(direction, FC payload bytes) for each frame of one FCP exchange."""
    full, rest = divmod(size, data_per_frame)
    data = [data_per_frame] * full + ([_pad4(rest)] if rest else [])
    if read:
        return [(TO_STORAGE, FCP_CMND)] + [(TO_HOST, d) for d in data] + [(TO_HOST, FCP_RSP)]
    return ([(TO_STORAGE, FCP_CMND), (TO_HOST, FCP_XFER_RDY)]
            + [(TO_STORAGE, d) for d in data] + [(TO_HOST, FCP_RSP)])


def _frames(frames: list[tuple[int, int]], wire_overhead: int, counted_overhead: int) -> Tally:
    t = Tally.empty()
    for direction, payload in frames:
        t.frames[direction] += 1
        t.wire[direction] += payload + wire_overhead
        t.counted[direction] += payload + counted_overhead
    return t


def _check_protocol(protocol: str, link: Link | None, mtu: int) -> None:
    if protocol not in modelled():
        raise ProtolabError(f"limits: unknown protocol {protocol!r}; choose one of {', '.join(modelled())}")
    fc = REGISTRY[protocol].fc_link
    if link is not None and (link.kind == "fc") != fc:
        want = "an FC link (4GFC, 8GFC, 16GFC, 32GFC)" if fc else "an Ethernet link (1GbE, 10GbE, …)"
        raise ProtolabError(f"limits: protocol {protocol} needs {want}, not {link.name}; pass another --link")
    if REGISTRY[protocol].min_mtu is not None and mtu < FCOE_MIN_MTU:
        raise ProtolabError(
            f"limits: FCoE needs an Ethernet MTU of at least {FCOE_MIN_MTU} (FC-BB-5 baby jumbo frames), "
            f"got {mtu}; pass --mtu 2500 or --mtu 9000"
        )
    if REGISTRY[protocol].tcp and not 576 <= mtu <= 65535:
        raise ProtolabError(f"limits: --mtu must be between 576 and 65535 for TCP protocols, got {mtu}")


def _fc(size: int, read: bool, mss: int, acks: str, oio: int) -> Tally:
    return _frames(_fcp_frames(size, read, FC_DATA_PER_FRAME), FC_FRAME_OVERHEAD + FC_IDLES, FC_FRAME_OVERHEAD)


def _fcoe(size: int, read: bool, mss: int, acks: str, oio: int) -> Tally:
    # the counted bytes are the Ethernet frame without preamble, FCS and gap, as for TCP
    counted = FCOE_WIRE_OVERHEAD - ETH_PREAMBLE_SFD - ETH_FCS - ETH_IFG
    return _frames(_fcp_frames(size, read, FC_DATA_PER_FRAME), FCOE_WIRE_OVERHEAD, counted)


def _over_tcp(bursts, merges: bool = False, server_extra: float = 0.0):
    return lambda size, read, mss, acks, oio: tcp(bursts(size, read), mss, acks, merges, oio, server_extra)


#: The wire models by name (a protocol's `wire_model` in plan.protocols): frames and bytes of one I/O.
#: (server_extra: the lab's server's own extra pure ACKs per segment it receives, captured: analysis.wire_tcp)
MODELS = {"iscsi": _over_tcp(_iscsi_bursts, server_extra=0.15), "nfs": _over_tcp(_nfs_bursts),
          "nbd": _over_tcp(_nbd_bursts, server_extra=0.06),
          "nvme-tcp": _over_tcp(_nvme_tcp_bursts, merges=True), "fc": _fc, "fcoe": _fcoe,
          "smb": _over_tcp(wire_smb.smb_bursts)}


def _one_io(protocol: str, size: int, read: bool, mss: int, acks: str = "linux", oio: int = 1) -> Tally:
    return MODELS[REGISTRY[protocol].wire_model or ""](size, read, mss, acks, oio)


def _sizes(block_size: int | Mapping[int, float]) -> dict[int, float]:
    mix = {int(block_size): 1.0} if isinstance(block_size, (int, float)) else \
        {int(k): float(w) for k, w in block_size.items()}
    total = sum(mix.values())
    if not mix or total <= 0 or any(w < 0 for w in mix.values()) or any(s <= 0 for s in mix):
        raise ProtolabError(f"limits: block size must be positive with positive weights, got {block_size!r}")
    return {s: w / total for s, w in mix.items()}


def wire_cost(
    protocol: str,
    *,
    block_size: int | Mapping[int, float],
    read_pct: float,
    mtu: int = 1500,
    link: str | float | Link | None = None,
    oio: int = 1,
) -> WireCost:
    """Expected frames and bytes per I/O in each direction for an access spec.

    `block_size` is bytes, or a mix {bytes: weight}; `read_pct` is 0..100. The
    result is the weighted expectation over sizes and over reads and writes.
    `link`, if given, is only checked to fit the protocol (FC needs an FC link).
    `oio`: I/Os in flight on each connection (a stream's); Linux's pure ACKs depend on it (analysis.wire_tcp).
    """
    protocol = protocol.lower()
    resolved = parse_link(link) if link is not None else None
    _check_protocol(protocol, resolved, mtu)
    if not 0.0 <= read_pct <= 100.0:
        raise ProtolabError(f"limits: --read-pct must be between 0 and 100, got {read_pct}")
    if oio < 1:
        raise ProtolabError(f"limits: --oio must be at least 1, got {oio}")
    mix = _sizes(block_size)
    mss = mtu - TCP_IP_HEADERS
    total = Tally.empty()
    payload = low = high = 0.0
    for size, weight in mix.items():
        payload += weight * size
        for read, share in ((True, read_pct / 100.0), (False, 1.0 - read_pct / 100.0)):
            if share == 0.0:
                continue
            one = _one_io(protocol, size, read, mss, oio=oio)
            low += weight * share * sum(_one_io(protocol, size, read, mss, "none").frames)
            high += weight * share * sum(_one_io(protocol, size, read, mss, "rfc").frames)
            for d in (TO_STORAGE, TO_HOST):
                total.frames[d] += weight * share * one.frames[d]
                total.wire[d] += weight * share * one.wire[d]
                total.counted[d] += weight * share * one.counted[d]
    per_frame = mss if REGISTRY[protocol].tcp else FC_DATA_PER_FRAME
    return WireCost(
        protocol, None if REGISTRY[protocol].fc_link else mtu, payload, read_pct, per_frame,
        total.frames[TO_STORAGE], total.frames[TO_HOST], total.wire[TO_STORAGE], total.wire[TO_HOST],
        total.counted[TO_STORAGE], total.counted[TO_HOST], REGISTRY[protocol].modelled_only, low, high,
    )


def ceiling(
    protocol: str,
    *,
    link_bps: str | float | Link,
    mtu: int = 1500,
    block_size: int | Mapping[int, float],
    read_pct: float,
    oio: int = 1,
) -> Ceiling:
    """The link's ceiling in IOPS and MB/s: its byte rate over the busier direction's bytes per I/O."""
    link = parse_link(link_bps)
    cost = wire_cost(protocol, block_size=block_size, read_pct=read_pct, mtu=mtu, link=link, oio=oio)
    to_host = cost.bytes_to_host >= cost.bytes_to_storage
    worst = cost.bytes_to_host if to_host else cost.bytes_to_storage
    iops = link.bps / (8.0 * worst)
    return Ceiling(
        cost.protocol, link.name, link.bps, iops, iops * cost.payload_bytes / 1e6,
        "to host" if to_host else "to storage", cost, cost.modelled_only,
    )
