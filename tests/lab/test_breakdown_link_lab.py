"""method.breakdown with a slower link (issue 46: "the induced-delay test finds each added delay in the right
component within 10 %"; the device model's added delay is test_breakdown_lab.py's): iSCSI (tgtd), 4 KiB random
reads at 1 OIO over a 500 µs device model, every lab link at 10, 100 and 1000 Mbit/s (plan.sweep), one lab.

What a slower wire adds per I/O (analysis.wire.wire_cost, iSCSI 4 KiB read, MTU 1500, 1 OIO): 228.4 B to the
storage and 4,414 B to the host, (228.4 + 4,414) × 8 = 37,139 bits, each sent once (one serialization per
direction, as through a cut-through switch; a store-and-forward switch doubles it): 37.1 µs at 1 Gbit/s, 371.4 µs
at 100 Mbit/s, 3,713.9 µs at 10 Mbit/s — so 334.3 µs and 3,676.8 µs more than at 1 Gbit/s, which the network part
(the host's SRT − the server's) should grow by.

It does not, for three reasons measured on this lab (2026-12-07, load average 9–35; fio's mean while captured =
initiator + network + server + device, µs):
- 1000 Mbit/s: 734 = 101 + 10.0 + 123 + 500; 100 Mbit/s: 725 = 93 + 9.3 + 119 + 504. A link that is not full adds
  nothing: the lab's rate is tbf (lab.netns.tc_commands), a token bucket of 16 KiB or 1 ms of the rate, which
  passes an I/O's 4.4 KB at once — no frame waits its serialization (captured at 100 Mbit/s: a reply's two frames
  50 µs apart, not the 105 µs its second one takes to send).
- 10 Mbit/s (the link full, 283 IOPS): 3,525 = 1,201 + 13.9 + 1,810 + 500. The wait is in the *sender's* egress
  tbf, before its capture point (tcpdump taps a frame as the qdisc dequeues it): a reply's wait for tokens (up to
  2.37 ms, 2,962 B at 10 Mbit/s) lands in the server part; the storage port and the host's NIC saw its first frame
  6 µs apart. The switch's tbf toward the receiver gets the frames already paced and never waits.
- tshark's iscsi.time is taken at the reply's first frame (its BHS: Data-In with status; 256 bytes of each frame
  are kept, nothing is reassembled), so the reply's other frame (1,314 B, 1.05 ms later at 10 Mbit/s) lands in
  the initiator part.
Capturing at the veth's other ends would not help (a veth's peer receives as the near end sends); putting the
wire between the points means shaping only at the switch's egress toward each receiver, and per-frame pacing —
a change to the lab's links, not to the capture. Until then the test below is a strict xfail with that reason.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import family_prefix, lab_workdir, run_plan
from protolab.analysis.time_breakdown import RESIDUAL_PCT, of_record
from protolab.analysis.wire import wire_cost
from protolab.results.rundir import RunDir

pytestmark = pytest.mark.lab
PREFIX = family_prefix("j")
MBIT = (10, 100, 1000)  # the sweep's link rates, Mbit/s

PLAN = f"""
name = "breakdown-link"
baseline = "iscsi"
workloads = [{{ name = "4k-randread", block_size = "4k", read_pct = 100, random_pct = 100 }}]
load_points = [{{ streams = 1, oio = 1 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[lab.storage]
service_time = "500us"
parallelism = 16
[sweep]
link_rate = {json.dumps([f"{m}mbit" for m in MBIT])}
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[method]
warmup = "0.5s"
duration = "3s"
repeats = 1
data_size = "32M"
breakdown = true
"""


def wire_us(mbit: int) -> float:
    """One 4 KiB read's bytes both ways on the wire (framing, preamble and gaps included) at ``mbit``, µs."""
    w = wire_cost("iscsi", block_size=4096, read_pct=100, mtu=1500, oio=1)
    return (w.bytes_to_storage + w.bytes_to_host) * 8 / (mbit * 1e6) * 1e6


@pytest.fixture(scope="module")
def workdir():
    yield from lab_workdir(PREFIX, "breakdown-link")


@pytest.fixture(scope="module")
def parts(workdir, tmp_path_factory):
    began = time.monotonic()
    run = run_plan(PLAN, workdir, tmp_path_factory.mktemp("breakdown-link"), "breakdown-link")
    print(f"run took {time.monotonic() - began:.1f} s")
    out = {}
    for r in RunDir.open(run, write=False).records():
        b = of_record(r)
        out[int(r.coords["link_rate"])] = ({p.name: p.us for p in b.parts}, b, r)
        print(f"{r.coords['link_rate']} Mbit/s: fio {r.service_times.lat_captured_us} µs = "
              + " + ".join(f"{p.name} {p.us:.1f}" for p in b.parts) + f" (residual {b.residual_pct:+.2f} %,"
              f" IOPS captured {r.service_times.iops_captured}); the wire adds {wire_us(int(r.coords['link_rate'])):.1f}")
    return out


def test_each_rates_capture_splits_fios_mean_into_four_parts(parts):
    assert set(parts) == set(MBIT)
    assert wire_us(100) - wire_us(1000) == pytest.approx(334.3, abs=0.1)  # the module's arithmetic
    for mbit, (named, b, rec) in parts.items():
        assert list(named) == ["initiator", "network", "server", "device"], (mbit, named)
        assert all(p.pairs > 100 for p in rec.service_times.points), (mbit, rec.service_times.points)
        assert abs(b.residual_pct) <= RESIDUAL_PCT, (mbit, b)


@pytest.mark.xfail(strict=True, reason="the lab's tbf passes a not-full link's I/O at once and makes a full link's "
                   "frames wait before the sender's capture point (at 10 against 1000 Mbit/s: server +1,687 µs, "
                   "initiator +1,101, network +3.9; the wire model: +3,677): see the module's text")
def test_a_slower_links_added_time_is_found_in_the_network_part(parts):
    fast = parts[1000][0]["network"]
    for mbit in (10, 100):
        added = wire_us(mbit) - wire_us(1000)
        assert abs((parts[mbit][0]["network"] - fast) / added - 1) <= 0.10, (mbit, parts[mbit][0], added)
