"""The wire model against a real capture: 8 KiB random iSCSI reads in the lab, offloads off.

tests/data/wire-capture-iscsi-8k.json is the summary scripts/capture-wire.py wrote from tcpdump
on the lab's storage port (frame sizes as tcpdump reports them: Ethernet header + IP packet),
at MTU 1500 and 9000, one and eight I/Os outstanding.

With one I/O outstanding the model's assumptions hold (each message its own segments, Linux's ACK
rule) and it matches to within 10 % (in fact 0.1 %). With eight, TCP packs back-to-back responses
into shared segments and ACKs ride on more data: the capture still lies within the model's range
(no pure ACK .. one per two segments) and within 15 % of its expectation.
"""

import json
from pathlib import Path

import pytest

from protolab.analysis.wire import ETH_HEADER, IPV4_HEADER, TCP_HEADER, TCP_TIMESTAMPS, wire_cost

CAPTURE = json.loads((Path(__file__).parents[1] / "data/wire-capture-iscsi-8k.json").read_text())["captures"]
HEADERS = ETH_HEADER + IPV4_HEADER + TCP_HEADER + TCP_TIMESTAMPS  # 66 B: a pure ACK's frame


def _cases(iodepth=None):
    return [pytest.param(c, id=f"mtu{c['mtu']}-qd{c['iodepth']}") for c in CAPTURE
            if iodepth is None or c["iodepth"] == iodepth]


def test_the_capture_covers_both_mtus_and_is_large():
    assert {(c["mtu"], c["iodepth"]) for c in CAPTURE} >= {(1500, 1), (9000, 1), (1500, 8), (9000, 8)}
    assert all(c["ios"] > 5000 for c in CAPTURE)


@pytest.mark.parametrize("cap", _cases(1))
def test_frames_per_io_within_ten_percent_of_the_capture(cap):
    model = wire_cost("iscsi", block_size=8192, read_pct=100, mtu=cap["mtu"])
    captured = cap["frames"] / cap["ios"]
    assert model.frames == pytest.approx(captured, rel=0.10)
    assert model.frames_low * 0.99 <= captured <= model.frames_high


@pytest.mark.parametrize("cap", _cases(8))
def test_deeper_queues_stay_in_the_models_range(cap):
    model = wire_cost("iscsi", block_size=8192, read_pct=100, mtu=cap["mtu"])
    captured = cap["frames"] / cap["ios"]
    assert model.frames == pytest.approx(captured, rel=0.15)
    assert model.frames_low <= captured <= model.frames_high
    # the range's bounds hold the capture: no pure ACK at all .. one per two segments (RFC 1122)
    assert model.frames_low * 0.99 <= captured <= model.frames_high


@pytest.mark.parametrize("cap", _cases(1))
def test_frame_sizes_are_the_models(cap):
    """The data frames the model predicts are the capture's commonest sizes: full segments of
    MSS + 66 B, the tail of the 8240 B Data-In PDU, the 48 B command (114 B) and 66 B ACKs."""
    mss = cap["mtu"] - 52
    sizes = {int(k): v for k, v in cap["frame_sizes"].items()}
    full, tail = divmod(8192 + 48, mss)
    ios = cap["ios"]
    assert sizes.get(48 + HEADERS, 0) / ios == pytest.approx(1.0, rel=0.02)  # one command per I/O
    if full:
        assert sizes.get(mss + HEADERS, 0) / ios == pytest.approx(full, rel=0.02)
    assert sizes.get(tail + HEADERS, 0) / ios == pytest.approx(1.0, rel=0.02)
    acks = sum(cap["pure_acks"].values()) / ios
    model = wire_cost("iscsi", block_size=8192, read_pct=100, mtu=cap["mtu"])
    # one I/O at a time: exactly Linux's rule, one pure ACK per multi-segment reply
    assert acks == pytest.approx(model.frames - model.frames_low, abs=0.05)
