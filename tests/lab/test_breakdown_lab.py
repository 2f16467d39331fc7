"""method.breakdown through a whole real run (`protolab run`): iSCSI (tgtd), NFS (NFS-Ganesha) and NBD (nbdkit) at
1 OIO on one lab, each cell's sampled capture at the load host's NIC and the storage port, dissected by tshark.

At each point the mean request→reply time is a part of fio's own mean: the host sees the request leave and the
reply arrive after the server did, so host ≥ server; and fio's latency adds the initiator's own time on top, so host
< fio. The capture's files are in the run directory; tcpdump dropped nothing at 1 OIO. NBD: tshark 4.0's dissector
matches simple replies only, and libnbd asks nbdkit for structured ones — the point says so instead of a mean.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import family_prefix, lab_workdir, run_plan

pytestmark = pytest.mark.lab
PREFIX = family_prefix("k")

PLAN = f"""
name = "breakdown-lab"
baseline = "iscsi"
workloads = [{{ name = "4k-randread", block_size = "4k", read_pct = 100, random_pct = 100, oio = 1 }}]
[lab]
prefix = "{PREFIX}"
pool_size = "512M"
export_size = "64M"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[configurations]]
name = "nfs"
target = "lab:nfs"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[load_points]]
streams = 1
[method]
warmup = "1s"
duration = "3s"
repeats = 1
data_size = "32M"
breakdown = true
"""


@pytest.fixture
def workdir():
    yield from lab_workdir(PREFIX, "breakdown")


def test_each_protocols_capture_gives_host_and_server_times_inside_fios_mean(workdir, tmp_path):
    began = time.monotonic()
    run = run_plan(PLAN, workdir, tmp_path, "breakdown")
    print(f"run took {time.monotonic() - began:.1f} s")
    recs = {r["coords"]["configuration"]: r for r in map(json.loads, (run / "records.jsonl").read_text().splitlines())}
    assert set(recs) == {"iscsi", "nfs", "nbd"}
    for name, rec in recs.items():
        st = rec["service_times"]
        assert st["protocol"] == name and (st["start_s"], st["seconds"]) == (pytest.approx(1.0, abs=0.3),
                                                                           pytest.approx(1.0, abs=0.3))
        points = {p["role"]: p for p in st["points"]}
        assert points["host"]["point"] == f"{PREFIX}-h0/{PREFIX}h0n0"
        assert points["server"]["point"] == f"{PREFIX}-st/{PREFIX}s0"
        for p in points.values():
            assert p["frames"] > 1000 and p["dropped"] == 0, (name, p)
            assert (run / "captures" / f"{rec['cell_id']}-{p['role']}.pcap").stat().st_size > 24 * p["frames"]
        # the cost: IOPS of the intervals wholly inside the capture and wholly outside it (one each of 3)
        assert st["iops_captured"] > 0 and st["iops_uncaptured"] > 0, st
        host, server, fio = points["host"], points["server"], rec["result"]["lat_mean_us"]
        print(name, fio, host["srt_us"], host["pairs"], server["srt_us"], server["pairs"], st["iops_captured"],
              st["iops_uncaptured"])
        if name == "nbd":
            assert host["pairs"] == 0 and host["srt_us"] is None
            assert host["note"] == f"tshark's dissector matched no reply (nbd.time) among {host['frames']} frames"
            continue
        assert host["pairs"] > 100 and server["pairs"] > 100, (name, points)
        assert server["srt_us"] <= host["srt_us"] < fio, (name, server["srt_us"], host["srt_us"], fio)
