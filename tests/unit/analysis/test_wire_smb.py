"""The SMB wire model (analysis.wire_smb): SMB2 READ and WRITE messages, their TCP frames and bytes per I/O."""

from __future__ import annotations

import pytest

from protolab.analysis import wire, wire_smb
from protolab.analysis.wire_smb import credit_charge, message, requests, smb_bursts

HEADERS = 52 + 14  # IP, TCP with timestamps, Ethernet header: what a counter counts beyond the TCP payload


def test_directions_are_the_wire_models():
    assert (wire_smb.TO_STORAGE, wire_smb.TO_HOST) == (wire.TO_STORAGE, wire.TO_HOST)


def test_each_message_is_the_transport_header_the_smb2_header_and_its_body():
    # [MS-SMB2]: 4 B before each message, a 64 B header, then the command's fields
    assert smb_bursts(8192, read=True) == [(0, 4 + 64 + 49), (1, 4 + 64 + 16 + 8192)]
    assert smb_bursts(8192, read=False) == [(0, 4 + 64 + 48 + 8192), (1, 4 + 64 + 16)]
    assert message(0) == 68


def test_an_io_above_the_clients_size_is_several_requests_and_credits_add_no_message():
    assert requests(8 << 20) == [4 << 20, 4 << 20] and requests(5000) == [5000]
    assert len(smb_bursts(8 << 20, read=True)) == 4 and len(smb_bursts(1 << 20, read=False, max_io=65536)) == 32
    assert [credit_charge(n) for n in (1, 8192, 65536, 65537, 1 << 20, 8 << 20)] == [1, 1, 1, 2, 16, 128]


def test_an_8k_read_at_mtu_1500_frame_by_frame(smb_wire):
    cost = smb_wire.wire_cost("smb", block_size=8192, read_pct=100, mtu=1500)
    # the response, 8,276 B of TCP payload, is 6 segments at MSS 1448 (5 full, one of 1,036 B); the request one
    # one I/O in flight: the server's ACK of the one-segment request rides on the response (analysis.wire_tcp)
    assert cost.frames_to_host == 6 and cost.counted_bytes_to_host == 8276 + 6 * HEADERS
    acks = wire.pure_acks(6, 1448)  # the client's, for the 6-segment response: 1 + 4/220
    assert acks == pytest.approx(1 + 4 / 220) and cost.frames_to_storage == pytest.approx(1 + acks)
    assert cost.counted_bytes_to_storage == pytest.approx(117 + HEADERS + acks * HEADERS)
    # RFC 1122: one ACK per two segments of the response; the request's rides on the response
    assert cost.frames_low == 7 and cost.frames_high == 1 + 6 + 3
    assert round(cost.frames, 2) == 8.02


def test_a_server_slower_than_half_a_millisecond_sends_an_interim_response_first(smb_wire):
    # Samba answers a READ or WRITE it has not done within 500 µs with STATUS_PENDING (64 + 9 B), then the data
    assert wire_smb.interim(501) and not wire_smb.interim(500)
    assert smb_bursts(8192, read=True, interim=True) == [(0, 117), (1, 77), (1, 84 + 8192)]
    assert smb_bursts(4096, read=False, interim=True) == [(0, 116 + 4096), (1, 77), (1, 84)]
    fast = smb_wire.wire_cost("smb", block_size=8192, read_pct=100, mtu=1500)
    slow = smb_wire.wire_cost("smb-slow", block_size=8192, read_pct=100, mtu=1500)
    assert slow.frames_low == fast.frames_low + 1
    assert slow.counted_bytes_to_host == pytest.approx(fast.counted_bytes_to_host + 77 + HEADERS)
    # the interim response and the response are one burst of 7 segments to the client: 1 + 5/220 pure ACKs
    assert slow.counted_bytes_to_storage == pytest.approx(fast.counted_bytes_to_storage + HEADERS / 220)


def test_writes_and_jumbo_frames(smb_wire):
    w = smb_wire.wire_cost("smb", block_size=65536, read_pct=0, mtu=9000)
    # WRITE of 64 KiB: 65,652 B at MSS 8948 is 8 segments; the response one
    assert w.frames_low == 8 + 1 and w.counted_bytes_to_storage > 65536 + 116
    mixed = smb_wire.wire_cost("smb", block_size=4096, read_pct=70, mtu=1500)
    r = smb_wire.wire_cost("smb", block_size=4096, read_pct=100, mtu=1500)
    wr = smb_wire.wire_cost("smb", block_size=4096, read_pct=0, mtu=1500)
    assert mixed.frames == pytest.approx(0.7 * r.frames + 0.3 * wr.frames)


def test_the_link_ceiling_of_smb_sits_between_nbd_and_nfs_for_8k_reads(smb_wire):
    # per I/O: NBD 16 B of reply header, SMB 84 B, NFSv3 164 B (analysis.wire): the same data, more framing
    ceil = {p: smb_wire.ceiling(p, link_bps="1GbE", mtu=1500, block_size=8192, read_pct=100).iops
            for p in ("nbd", "smb", "nfs")}
    assert ceil["nbd"] > ceil["smb"] > ceil["nfs"]


def test_the_model_against_a_capture_of_a_guests_cifs_client(smb_wire):
    """tests/data/wire-capture-smb.json (tests/lab/test_cifs_guest.py): 8 KiB random reads at 1 OIO from a TCG
    guest's CIFS client to smbd, MTU 1500, offloads off. Per I/O: a 183 B request, 5 full frames and a 1,102 B one
    (the 8,276 B response), 1.02 pure ACKs from the client and none from smbd (its ACK rides on the response):
    8.07 frames against the model's 8.02, bytes within 0.5 %."""
    import json

    from conftest import DATA

    [c] = json.loads((DATA / "wire-capture-smb.json").read_text())["cases"]
    w = smb_wire.wire_cost("smb", block_size=c["block_size"], read_pct=100, mtu=c["mtu"])
    captured = sum(c["frames"].values()) / c["ios"]
    assert w.frames == pytest.approx(captured, rel=0.05) and w.frames_low <= captured <= w.frames_high
    counted = sum(c["bytes"].values()) / c["ios"]
    assert w.counted_bytes_to_host + w.counted_bytes_to_storage == pytest.approx(counted, rel=0.005)
    # the messages' own sizes, as frames: request 117 + 66, the response's tail 1,036 + 66
    assert c["frame_sizes"]["183"] == c["frame_sizes"]["66"] == c["ios"] and c["frame_sizes"]["1102"] >= c["ios"]
