"""TCP under the wire model: a protocol's messages cut into segments, and the pure ACKs Linux sends for them.

analysis.wire gives each protocol's messages of one I/O as (direction, bytes) in order; this module counts
frames and bytes: Ethernet + IPv4 (20 B) + TCP (20 B + 12 B of timestamps, RFC 7323, which Linux sends by
default), so MSS = MTU - 52 and every segment costs 66 B counted (Ethernet header + IP packet) and 90 B on the
wire (preamble + SFD 8, FCS 4, gap 12 more). Storage stacks set TCP_NODELAY: each message is ceil(bytes / MSS)
segments of its own.

Pure ACKs (segments without data). RFC 1122 allows one per two full segments (the range's upper bound) down to
none (every ACK riding on data: the lower bound). What Linux sends lies between and depends on how the receiving
program reads: a receiver sends an ACK when a read leaves more than one MSS unacknowledged
(tcp_cleanup_rbuf), or when its window would move; otherwise the ACK waits and rides on its next message. A
**burst** is what one side sends before the other sends anything (consecutive messages in one direction: an
iSCSI command's header and its immediate data); k is its segments.

Captured on the embedded lab (tcpdump on the storage port; 1GbE, offloads off so every packet is a frame; fio's
libiscsi, nfs and nbd engines against tgt, NFS-Ganesha and nbdkit; 4 and 8 KiB random reads, 8 KiB random writes,
64 KiB sequential reads, at MTU 1500 and 9000, with 1 and 16 I/Os in flight; two runs, 96 captures in
tests/data/wire-capture-acks.json, made by scripts/capture-acks.py; host kernel 6.18):
- One I/O in flight on the connection (OIO 1 per stream): a one-segment burst draws **no** pure ACK (its ACK
  rides on the answer: 0.000-0.004 per burst in 44 cases), a burst of k >= 2 segments draws **one** (reads of 3 and
  6 segments: 0.98-1.02 in 12 cases), plus a few more for long bursts, ACK_EXTRA per segment beyond the second:
  64 KiB reads (46 segments at MTU 1500) drew 1.09-1.47 (mean 1.25), so 1/220 per segment (1 + 44/220 = 1.20); at
  MTU 9000 (8 segments of 8,948 B) 1.50-2.32 (mean 1.98), so 1/6 (1 + 6/6 = 2.0). Between the two MSSs the rate
  is interpolated, outside them held.
- More in flight (OIO > 1): ACKs ride on the other I/Os' requests, and Linux's count varies run to run. Per
  burst: one segment 0.06 (0.00-0.23 in 50 cases, mean 0.08), k >= 2 segments of 4 or 8 KiB 0.55 (0.11-1.15 in 18,
  mean 0.54), plus ACK_EXTRA_QUEUED per segment beyond the second (64 KiB reads: 0.89-2.40 at MTU 1500, 1/45;
  2.39-3.08 at 9000, 0.36). The frames per I/O lie within 12 % of this expectation in every capture (4 KiB
  reads over NFS drew the fewest ACKs: 10-12 % below), with one I/O in flight within 5 %.
- Writes at MTU 1500, one in flight (the server reads the data): NFS-Ganesha drew 1.01-1.03 pure ACKs per
  6-segment write, as the rule says; nbdkit 1.20-1.37 and tgtd 1.72-1.99 for 7 segments: they read a message in
  more pieces. Each protocol's model gives its lab server's extra ACKs per segment beyond the second
  (``server_extra``, added to ACK_EXTRA for bursts the server receives with one I/O in flight): tgtd 0.15
  (1 + 5 × (1/220 + 0.15) = 1.77), nbdkit 0.06 (1 + 4 × 0.065 = 1.26), none for NFS-Ganesha.
So an 8 KiB read at MTU 1500 is 1 + 6 data frames and 1 + 4/220 pure ACKs = 8.02 frames with one I/O in flight
(captured 7.96-8.02), and 7 + 0.55 + 4 × (1/45) + 0.06 = 7.70 with more (captured 7.37-7.88); at MTU 9000, 2
frames (1.94-2.01) and 2 + 2 × 0.06 = 2.12 (2.13-2.29). Not reproduced here: 9.62 frames per I/O that a review
captured for iSCSI at 2 × 8 OIO (issue 46); four captures and two runs' counters of that case gave 7.29-7.75.
Segmentation offloads are ignored: the model counts real frames. With offloads on (TSO, GSO and GRO on the lab's
veths, the default) a message crosses as one super-packet and the receiver ACKs what it sees: captured by hand
(iSCSI and NBD, 2026-12-07), one pure ACK per multi-segment message with one I/O in flight (0.90-1.01 per I/O for
8 and 64 KiB reads, so none of the long bursts' extra), 0.43-0.60 at 2 × 8 OIO, none for a one-segment message;
interface counters then count super-packets, not frames, and are never set beside the model (report.tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ETH_PREAMBLE_SFD, ETH_HEADER, ETH_FCS, ETH_IFG, ETH_MIN_PAYLOAD = 8, 14, 4, 12, 46
ETH_OVERHEAD = ETH_PREAMBLE_SFD + ETH_HEADER + ETH_FCS + ETH_IFG  # 38
IPV4_HEADER, TCP_HEADER, TCP_TIMESTAMPS = 20, 20, 12
TCP_IP_HEADERS = IPV4_HEADER + TCP_HEADER + TCP_TIMESTAMPS  # 52: MSS = MTU - 52
TO_STORAGE, TO_HOST = 0, 1

#: Pure ACKs per burst, as captured (see the module docstring): with one I/O in flight, and with more
ACKS_ONE_SEGMENT, ACKS_ONE_SEGMENT_QUEUED = 0.0, 0.06
ACKS_BURST, ACKS_BURST_QUEUED = 1.0, 0.55
#: ... and per segment beyond a burst's second, at the two MSSs captured (MTU 1500 and 9000)
ACK_EXTRA = {1448: 1 / 220, 8948: 1 / 6}
ACK_EXTRA_QUEUED = {1448: 1 / 45, 8948: 0.36}


@dataclass
class Tally:
    """Frames and bytes of one I/O of one size and one direction of data flow: [to storage, to host]."""

    frames: list[float]
    wire: list[float]
    counted: list[float]

    @classmethod
    def empty(cls) -> Tally:
        return cls([0.0, 0.0], [0.0, 0.0], [0.0, 0.0])


def _per_segment(table: dict[int, float], mss: int) -> float:
    """The extra ACKs per segment at ``mss``: interpolated between the captured MSSs, held outside them."""
    (lo, at_lo), (hi, at_hi) = sorted(table.items())
    share = min(1.0, max(0.0, (mss - lo) / (hi - lo)))
    return at_lo + share * (at_hi - at_lo)


def pure_acks(segments: int, mss: int = 1448, oio: int = 1, reader_extra: float = 0.0) -> float:
    """Expected pure ACKs Linux sends for a burst of ``segments`` (captured; see the module docstring), with
    ``oio`` I/Os in flight on the connection; ``reader_extra``: the receiving program's own extra ACKs per segment
    beyond the second with one I/O in flight (a server that reads a message in pieces)."""
    queued = oio > 1
    if segments <= 1:
        return ACKS_ONE_SEGMENT_QUEUED if queued else ACKS_ONE_SEGMENT
    extra = _per_segment(ACK_EXTRA_QUEUED, mss) if queued else _per_segment(ACK_EXTRA, mss) + reader_extra
    return (ACKS_BURST_QUEUED if queued else ACKS_BURST) + (segments - 2) * extra


def tcp(bursts: list[tuple[int, int]], mss: int, acks: str = "linux", merges: bool = False, oio: int = 1,
        server_extra: float = 0.0) -> Tally:
    """Segments, ACKs and bytes for a sequence of (direction, TCP payload bytes) messages of one I/O.

    ``acks``: "linux" (as captured, with ``oio`` I/Os in flight), or the range's bounds: "none" (every ACK rides on
    data) and "rfc" (one per two segments of a burst, one of them riding on the answer within the same I/O).
    ``merges``: the stack sends queued messages with MSG_MORE (NVMe/TCP); its lower bound ("none") is then the
    fully merged stream, bytes / MSS segments per message. ``server_extra``: the server's own extra ACKs per
    segment of the bursts it receives (pure_acks' ``reader_extra``)."""
    t = Tally.empty()

    def add_frames(direction: int, count: float, tcp_payload: int) -> None:
        # An IP packet with a TCP header is at least 52 B, above Ethernet's 46 B minimum payload: no padding.
        ip = tcp_payload + count * TCP_IP_HEADERS
        t.frames[direction] += count
        t.counted[direction] += ip + count * ETH_HEADER
        t.wire[direction] += ip + count * ETH_OVERHEAD

    runs: list[list[float]] = []  # [direction, segments] of each burst
    for direction, size in bursts:
        segments = size / mss if merges and acks == "none" else math.ceil(size / mss)
        add_frames(direction, segments, size)
        if runs and runs[-1][0] == direction:
            runs[-1][1] += segments
        else:
            runs.append([direction, segments])
    for i, (direction, segments) in enumerate(runs):
        back = 1 - int(direction)
        if acks == "linux":
            reader = server_extra if direction == TO_STORAGE else 0.0
            add_frames(back, pure_acks(int(segments), mss, oio, reader), 0)
        elif acks == "rfc":
            answered = i + 1 < len(runs)  # the next burst goes the other way and carries one ACK
            add_frames(back, math.ceil(segments / 2) - (1 if answered else 0), 0)
    return t
