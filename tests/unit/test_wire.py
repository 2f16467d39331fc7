"""The wire model against hand calculations.

Shared steps (see protolab.analysis.wire for sources):
  Ethernet on-wire overhead per frame = preamble+SFD 8 + header 14 + FCS 4 + IFG 12 = 38 B.
  IPv4 20 + TCP 20 + timestamps 12 = 52 B per segment, so a segment costs payload + 90 B
  on the wire, and MSS = MTU - 52: 1448 at MTU 1500, 8948 at MTU 9000.
  A pure ACK costs 52 + 38 = 90 B. As Linux does (captured, see test_wire_capture.py): a
  message of one segment draws no pure ACK (its ACK rides on the next data the receiver
  sends); a message of two segments or more draws one.
  1GbE moves 1e9 / 8 = 125 000 000 B/s in each direction.
"""

import math

import pytest

from protolab.analysis.wire import LINK_PRESETS, LINKS, ceiling, parse_link, parse_rate, wire_cost
from protolab.errors import ProtolabError

GBE = 1e9 / 8  # bytes per second per direction


def test_iscsi_8k_read_1gbe_mtu_1500():
    """Request: SCSI Command PDU = BHS 48 B, one segment: 48 + 90 = 138 B.
    Response: one Data-In PDU, BHS 48 + 8192 data (status collapsed) = 8240 B.
      ceil(8240 / 1448) = 6 segments (5 * 1448 = 7240, last 1000 B)
      to host = 8240 + 6 * 90 = 8780 B in 6 frames.
    ACKs: the command's ACK rides on the Data-In; the host ACKs the 6 segments with
      one pure ACK: to storage = 138 + 90 = 228 B in 2 frames. 8 frames per I/O, in a
      range of 7 (no pure ACK) to 10 (RFC 1122: ceil(6/2) = 3 pure ACKs).
    Ceiling: 125e6 / 8780 = 14 236.9 IOPS; * 8192 B = 116.6 MB/s; to host limits.
    """
    c = ceiling("iscsi", link_bps="1GbE", mtu=1500, block_size=8192, read_pct=100)
    w = c.wire_cost
    assert (w.frames_to_host, w.bytes_to_host) == (6, 8780)
    assert (w.frames_to_storage, w.bytes_to_storage) == (2, 228)
    assert (w.frames, w.frames_low, w.frames_high) == (8, 7, 10)
    assert w.max_payload_per_frame == 1448
    assert c.iops == pytest.approx(GBE / 8780) and round(c.iops, 1) == 14236.9
    assert c.mbps == pytest.approx(14236.9 * 8192 / 1e6, rel=1e-5)  # 116.6
    assert c.bottleneck_direction == "to host" and not c.modelled_only


def test_iscsi_8k_read_1gbe_mtu_9000():
    """MSS 8948 >= 8240: the Data-In PDU is one segment: to host = 8240 + 90 = 8330 B, 1 frame.
    to storage = command 138 B, 1 frame: the Data-In's ACK rides on the next command.
    2 frames per I/O, in a range of 2 to 3 (RFC 1122: the one segment draws an ACK).
    Ceiling: 125e6 / 8330 = 15 006.0 IOPS, 122.9 MB/s: jumbo frames buy 5.4 %.
    """
    c = ceiling("iscsi", link_bps="1GbE", mtu=9000, block_size=8192, read_pct=100)
    w = c.wire_cost
    assert (w.frames_to_host, w.bytes_to_host) == (1, 8330)
    assert (w.frames_to_storage, w.bytes_to_storage) == (1, 138)
    assert (w.frames, w.frames_low, w.frames_high) == (2, 2, 3)
    assert round(c.iops, 1) == 15006.0
    assert round(c.mbps, 1) == 122.9


def test_nfsv3_4k_read_1gbe_mtu_1500():
    """Call: record mark 4 + RPC call header 24 + AUTH_UNIX cred 36 + AUTH_NONE verf 8
      + READ3args (fh 4+32, offset 8, count 4 = 48) = 120 B: one segment, 210 B on the wire.
    Reply: record mark 4 + reply header 24 + status 4 + post_op_attr (4 + fattr3 84)
      + count 4 + eof 4 + data length 4 + 4096 = 4228 B;
      ceil(4228 / 1448) = 3 segments: to host = 4228 + 3 * 90 = 4498 B.
    ACKs: one pure ACK for the 3-segment reply: to storage = 210 + 90 = 300 B in 2 frames.
    Ceiling: 125e6 / 4498 = 27 790.1 IOPS, 113.8 MB/s.
    """
    c = ceiling("nfs", link_bps="1GbE", mtu=1500, block_size=4096, read_pct=100)
    w = c.wire_cost
    assert (w.frames_to_host, w.bytes_to_host) == (3, 4498)
    assert (w.frames_to_storage, w.bytes_to_storage) == (2, 300)
    assert round(c.iops, 1) == 27790.1
    assert round(c.mbps, 1) == 113.8
    # interface counters see the Ethernet header and the IP packets: 4228 + 3 * (14 + 52)
    assert w.counted_bytes_to_host == 4228 + 3 * 66


def test_fc_2k_frames_on_4gfc_8b10b():
    """FC frame = SOF 4 + header 24 + 2048 payload + CRC 4 + EOF 4 = 2084 B, + 6 idles 24 B = 2108 B.
    4GFC: 4.25 GBd, 8b/10b: 10 line bits per byte -> 2108 * 10 = 21 080 line bits per frame;
      back to back 4.25e9 / 21 080 = 201 612.9 frames/s = 412.9 MB/s of payload.
    One 2 KiB read: to storage FCP_CMND 32 + 60 = 92 B; to host one data frame 2108
      + FCP_RSP 24 + 60 = 84 -> 2192 B. The link moves 4.25e9 / 10 = 425e6 B/s:
      425e6 / 2192 = 193 886.9 IOPS = 397.1 MB/s.
    """
    c = ceiling("fc", link_bps="4GFC", block_size=2048, read_pct=100)
    w = c.wire_cost
    assert LINKS["4GFC"].baud == 4.25e9 and LINKS["4GFC"].coding == "8b/10b"
    assert LINK_PRESETS["4GFC"] == pytest.approx(4.25e9 * 8 / 10)
    assert (w.frames_to_host, w.bytes_to_host) == (2, 2108 + 84)
    assert (w.frames_to_storage, w.bytes_to_storage) == (1, 92)
    assert round(c.iops, 1) == 193886.9 and round(c.mbps, 1) == 397.1
    assert c.modelled_only and w.modelled_only and w.mtu is None
    frames_per_s = 4.25e9 / (2108 * 10)
    assert round(frames_per_s, 1) == 201612.9 and round(frames_per_s * 2048 / 1e6, 1) == 412.9
    assert LINK_PRESETS["4GFC"] / 8 / 2108 == pytest.approx(frames_per_s)
    # Large reads stream nearly back-to-back frames: close to that 412.9 MB/s, above the
    # nominal "400 MB/s" of 4GFC.
    big = ceiling("fc", link_bps="4GFC", block_size=1 << 20, read_pct=100)
    assert 400 < big.mbps < 412.9


def test_fc_presets_match_their_nominal_rates():
    # 8b/10b at 4.25/8.5 GBd, 64b/66b at 14.025/28.05 GBd -> 425/850/1700/3400 MB/s of bytes,
    # whose framed payload is the nominal 400/800/1600/3200 MB/s to within 7 %.
    for name, nominal in (("4GFC", 400), ("8GFC", 800), ("16GFC", 1600), ("32GFC", 3200)):
        mbps = ceiling("fc", link_bps=name, block_size=1 << 20, read_pct=100).mbps
        assert nominal <= mbps <= nominal * 1.07, name
    assert LINK_PRESETS["16GFC"] == pytest.approx(14.025e9 * 64 / 66)
    assert LINK_PRESETS["32GFC"] == pytest.approx(27.2e9)


def test_nbd_matches_the_lab_measurements_within_ten_percent():
    """LAB-NOTES: NBD through a 1 Gbit tbf: 8 KiB random reads ~14.2 K IOPS at MTU 1500 and
    ~15.0 K at 9000; 64 KiB sequential reads 118 MiB/s.
    Model: reply 16 + 8192 = 8208 B; MTU 1500: 6 segments, 8208 + 540 = 8748 B -> 14 289 IOPS;
    MTU 9000: 8298 B -> 15 064 IOPS. 64 KiB: 65 552 B in 46 segments = 69 692 B -> 1793.6 IOPS
    = 112.1 MiB/s (the lab ran with GSO on, so tbf saw fewer, larger packets: 5 % more).
    """
    k8_1500 = ceiling("nbd", link_bps="1GbE", mtu=1500, block_size=8192, read_pct=100)
    k8_9000 = ceiling("nbd", link_bps="1GbE", mtu=9000, block_size=8192, read_pct=100)
    k64 = ceiling("nbd", link_bps="1GbE", mtu=1500, block_size=65536, read_pct=100)
    assert k8_1500.wire_cost.bytes_to_host == 8748 and k8_9000.wire_cost.bytes_to_host == 8298
    assert k8_1500.iops == pytest.approx(14_200, rel=0.10)
    assert k8_9000.iops == pytest.approx(15_000, rel=0.10)
    assert k64.mbps / 1.048576 == pytest.approx(118, rel=0.10)
    assert k8_9000.iops > k8_1500.iops


def test_nbd_4k_write_mtu_1500():
    """Request 28 + 4096 = 4124 B: ceil(4124/1448) = 3 segments = 4124 + 270 = 4394 B.
    Storage: one pure ACK for the 3 segments + reply 16 + 90 = 106 B = 196 B, 2 frames.
    The reply's ACK rides on the next request: to storage 4394 B, 3 frames.
    Ceiling: 125e6 / 4394 = 28 447.9 IOPS, limited to storage.
    """
    c = ceiling("nbd", link_bps="1GbE", mtu=1500, block_size=4096, read_pct=0)
    w = c.wire_cost
    assert (w.frames_to_storage, w.bytes_to_storage) == (3, 4394)
    assert (w.frames_to_host, w.bytes_to_host) == (2, 196)
    assert c.bottleneck_direction == "to storage" and round(c.iops, 1) == 28447.9


def test_iscsi_64k_write_uses_r2t_mtu_9000():
    """RFC 7143 defaults: 8192 B immediate data in the command PDU (48 + 8192 = 8240, 1 segment);
    InitialR2T=Yes, so the rest (57 344 B) waits for an R2T (48 B), then 7 Data-Out PDUs
    of 48 + 8192 = 57 680 B, ceil(57680 / 8948) = 7 segments; then a 48 B SCSI Response.
    To storage: 8 data segments 8240 + 57680 + 8 * 90 = 66 640 B in 8 frames (the response's
      ACK rides on the next command).
    To host: R2T 138 + response 138 + 1 pure ACK for the 7 Data-Out segments 90 = 366 B in 3 frames.
    """
    w = wire_cost("iscsi", block_size=65536, read_pct=0, mtu=9000)
    assert (w.frames_to_storage, w.bytes_to_storage) == (8, 66640)
    assert (w.frames_to_host, w.bytes_to_host) == (3, 366)


def test_mixes_are_expected_values():
    read = wire_cost("nbd", block_size=8192, read_pct=100, mtu=1500)
    write = wire_cost("nbd", block_size=8192, read_pct=0, mtu=1500)
    mixed = wire_cost("nbd", block_size=8192, read_pct=75, mtu=1500)
    assert mixed.bytes_to_host == pytest.approx(0.75 * read.bytes_to_host + 0.25 * write.bytes_to_host)
    assert mixed.frames_to_storage == pytest.approx(0.75 * read.frames_to_storage + 0.25 * write.frames_to_storage)
    small = wire_cost("nbd", block_size=4096, read_pct=100, mtu=1500)
    big = wire_cost("nbd", block_size=65536, read_pct=100, mtu=1500)
    mix = wire_cost("nbd", block_size={4096: 3, 65536: 1}, read_pct=100, mtu=1500)
    assert mix.payload_bytes == 0.75 * 4096 + 0.25 * 65536
    assert mix.bytes_to_host == pytest.approx(0.75 * small.bytes_to_host + 0.25 * big.bytes_to_host)


def test_fcoe_frames_and_mtu():
    """FCoE adds 88 B around each FC payload (preamble 8, MACs 12, VLAN 4, EtherType 2,
    FCoE header 14, FC header 24, CRC 4, EOF+reserved 4, FCS 4, IFG 12).
    8 KiB read: 4 data frames of 2048 + 88 = 2136 B and FCP_RSP 24 + 88 = 112 -> 8656 B to host;
    FCP_CMND 32 + 88 = 120 B to storage. 10GbE: 1.25e9 / 8656 = 144 408 IOPS.
    """
    c = ceiling("fcoe", link_bps="10GbE", mtu=2500, block_size=8192, read_pct=100)
    assert (c.wire_cost.frames_to_host, c.wire_cost.bytes_to_host) == (5, 8656)
    assert c.wire_cost.bytes_to_storage == 120
    assert math.floor(c.iops) == 144408 and c.modelled_only
    with pytest.raises(ProtolabError, match="FCoE needs an Ethernet MTU of at least 2158"):
        wire_cost("fcoe", block_size=8192, read_pct=100, mtu=1500)


def test_links_must_fit_protocols_and_names_must_exist():
    with pytest.raises(ProtolabError, match=r"^limits: unknown protocol 'smb'; choose one of iscsi, nfs, nbd, fc, fcoe$"):
        wire_cost("smb", block_size=4096, read_pct=100)
    with pytest.raises(ProtolabError, match="needs an FC link"):
        ceiling("fc", link_bps="1GbE", block_size=4096, read_pct=100)
    with pytest.raises(ProtolabError, match="needs an Ethernet link"):
        ceiling("iscsi", link_bps="8GFC", block_size=4096, read_pct=100)
    with pytest.raises(ProtolabError, match="read-pct"):
        wire_cost("nbd", block_size=4096, read_pct=120)


@pytest.mark.parametrize(
    ("text", "bps"),
    [("1GbE", 1e9), ("10gbe", 1e10), ("10gbit", 1e10), ("2.5G", 2.5e9), ("100M", 1e8),
     ("1e9", 1e9), (1e9, 1e9), ("25 Gbit/s", 2.5e10), ("8GFC", 6.8e9)],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == pytest.approx(bps)


def test_parse_rate_refuses_nonsense():
    for bad in ("fast", "-1G", "10MB/s", 0):
        with pytest.raises(ProtolabError, match="link"):
            parse_rate(bad)
    assert parse_link("4gfc").kind == "fc" and parse_link("2.5G").kind == "ethernet"
