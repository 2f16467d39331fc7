"""method.breakdown through a whole real run (`protolab run`): iSCSI (tgtd), NFS (NFS-Ganesha) and NBD (nbdkit) over one
device model at 1 and 16 OIO and two service times (200 µs and 1 ms, plan.sweep), one lab; each cell's sampled capture
at the load host's NIC and the storage port, dissected by tshark, and the device model's own time.

At each point the mean request→reply time is a part of fio's own mean: the host sees the request leave and the
reply arrive after the server did, so host ≥ server; and fio's latency while the capture ran adds the initiator's own
time on top, so host < fio's (its mean over the whole window can be lower: the capture slows the I/Os it sees). The capture's files are in the run directory; tcpdump dropped nothing at 1 OIO. NBD: tshark 4.0's dissector
matches simple replies only, and libnbd asks nbdkit for structured ones — the point says so instead of a mean, and
the breakdown folds the parts that point bounds ("initiator + network + server").

The breakdown (analysis.time_breakdown): every window's parts — of fio's mean while the capture ran, the device's
time over the capture's span — add up to it within issue 46's 5 % (their times nest: none out of order); and the
delay added between the two service times (800 µs) is found in the device part within 10 %. (fio's own mean and the
parts above the device move with the capture's cost, which on this shared machine varied from none to a third of a
window's IOPS: they are printed, not asserted.) Not NBD's: nbdkit's file plugin (cache=none) reads through the page
cache, whose readahead reaches the device model beside the I/Os and waits for its servers at 1 OIO (a queue of
137 µs per request once at 1 ms): its device part is the device's busy time per I/O, more than the I/O's own.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import family_prefix, lab_workdir, run_plan
from protolab.analysis.time_breakdown import RESIDUAL_PCT, of_record
from protolab.results.rundir import RunDir

pytestmark = pytest.mark.lab
PREFIX = family_prefix("k")
US = (200, 1000)  # the device model's service time at the sweep's two points
ADDED = US[1] - US[0]

PLAN = f"""
name = "breakdown-lab"
baseline = "iscsi"
workloads = [{{ name = "4k-randread", block_size = "4k", read_pct = 100, random_pct = 100 }}]
load_points = [{{ streams = 1, oio = 1 }}, {{ streams = 1, oio = 16 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[lab.storage]
service_time = "{US[0]}us"
parallelism = 16
[sweep]
service_time = {json.dumps([f"{u}us" for u in US])}
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[configurations]]
name = "nfs"
target = "lab:nfs"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[method]
warmup = "0.5s"
duration = "3s"
repeats = 1
data_size = "32M"
breakdown = true
"""


@pytest.fixture(scope="module")
def workdir():
    yield from lab_workdir(PREFIX, "breakdown")


@pytest.fixture(scope="module")
def run(workdir, tmp_path_factory):
    began = time.monotonic()
    out = run_plan(PLAN, workdir, tmp_path_factory.mktemp("breakdown"), "breakdown")
    print(f"run took {time.monotonic() - began:.1f} s")
    return out


def _key(rec: dict) -> tuple[str, int, int]:
    return rec["coords"]["configuration"], rec["total_oio"], int(rec["coords"]["service_time"])


def test_each_protocols_capture_gives_host_and_server_times_inside_fios_mean(run):
    recs = {_key(r): r for r in map(json.loads, (run / "records.jsonl").read_text().splitlines())}
    assert set(recs) == {(c, oio, us) for c in ("iscsi", "nfs", "nbd") for oio in (1, 16) for us in US}
    for (name, oio, us), rec in recs.items():
        st = rec["service_times"]
        assert st["protocol"] == name and (st["start_s"], st["seconds"]) == (pytest.approx(1.0, abs=0.3),
                                                                           pytest.approx(1.0, abs=0.3))
        points = {p["role"]: p for p in st["points"]}
        assert points["host"]["point"] == f"{PREFIX}-h0/{PREFIX}h0n0"
        assert points["server"]["point"] == f"{PREFIX}-st/{PREFIX}s0"
        for p in points.values():
            assert p["frames"] > 1000 and (p["dropped"] == 0 or oio > 1), (name, p)
            assert (run / "captures" / f"{rec['cell_id']}-{p['role']}.pcap").stat().st_size > 24 * p["frames"]
        # the cost: IOPS of the intervals wholly inside the capture and wholly outside it (one each of 3)
        assert st["iops_captured"] > 0 and st["iops_uncaptured"] > 0, st
        host, server, fio = points["host"], points["server"], rec["result"]["lat_mean_us"]
        print(name, oio, us, fio, host["srt_us"], host["pairs"], server["srt_us"], server["pairs"],
              st["iops_captured"], st["iops_uncaptured"])
        if name == "nbd":
            assert host["pairs"] == 0 and host["srt_us"] is None
            assert host["note"] == f"tshark's dissector matched no reply (nbd.time) among {host['frames']} frames"
            continue
        assert host["pairs"] > 100 and server["pairs"] > 100, (name, points)
        # fio's mean while the capture ran: the capture's own cost slows those I/Os (NFS: 15 % fewer IOPS once)
        during = st["lat_captured_us"]
        assert server["srt_us"] <= host["srt_us"] < during, (name, oio, us, server, host, during, fio)


def test_each_windows_parts_add_up_to_fios_mean_and_an_added_device_delay_is_found_in_the_device_part(run):
    parts, said = {}, []
    for r in RunDir.open(run, write=False).records():
        b = of_record(r)
        said.append(f"{r.cell_id}: fio {r.result.lat_mean_us:.1f} µs = " + " + ".join(f"{p.name} {p.us:.1f}"
                                                                                        for p in b.parts)
                    + f" (residual {b.residual_pct:+.2f} %; while captured: fio {r.service_times.lat_captured_us} µs"
                    f", IOPS {r.service_times.iops_captured}, device {r.service_times.device})")
        parts[(r.configuration, r.total_oio, int(r.coords["service_time"]))] = ({p.name: p.us for p in b.parts}, b,
                                                                                 r.result.lat_mean_us)
    print("\n".join(said))
    for (c, oio, us), (named, b, _) in parts.items():
        # every level measured (NBD's points have no mean: the capture's parts folded, by name)
        assert list(named) == (["initiator + network + server", "device"] if c == "nbd" else
                               ["initiator", "network", "server", "device"]), said
        assert abs(b.residual_pct) <= RESIDUAL_PCT, said
    for c in ("iscsi", "nfs"):  # NBD: see the module's text
        for oio in (1, 16):
            (low, _, _), (high, _, _) = parts[(c, oio, US[0])], parts[(c, oio, US[1])]
            assert abs((high["device"] - low["device"]) / ADDED - 1) <= 0.10, (c, oio, said)
    md = (run / "report.md").read_text()
    assert "## Where each microsecond goes" in md and "time_parts" in (run / "cells.csv").read_text().splitlines()[0]
