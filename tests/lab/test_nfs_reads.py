"""NFS through fio's userspace engine: 64 KiB sequential reads at 8 and 32 outstanding I/Os complete, without errors.

fio 3.33's nfs engine left I/Os in flight at the end of every job (its getevents ignored
`min`); the unmount then failed them and, with 64 KiB reads at 3 or more in flight, hung
for ever. protolab builds fio with patches/fio/0001-nfs-getevents-honours-min.patch.
"""

from __future__ import annotations

import pytest
from test_study import PREFIX, config, plan_text, workdir  # noqa: F401  (fixture)

from conftest import leftovers
from protolab.analysis.wire import ceiling
from protolab.plan.load import load_plan_text
from protolab.run import Study

pytestmark = pytest.mark.lab


def test_nfs_64k_sequential_reads_complete_without_errors(workdir, tmp_path):
    # 8 and 32 in flight as two load points of one run: one lab and one prepared file serve both
    text = plan_text(config("nfs", "lab:nfs"), lab='[lab.link]\nrate = "1GbE"',
                     workload='"seq-read-64k"', load="streams = 1\noio = 8\n[[load_points]]\nstreams = 1\noio = 32",
                     method='warmup = "1s"\nduration = "3s"\nrepeats = 2')
    rundir = Study(load_plan_text(text), text, "nfs", results_root=tmp_path / "r", lab_workdir=workdir).run()
    recs = rundir.records()
    assert sorted((r.oio_per_stream, r.repeat) for r in recs) == [(8, 1), (8, 2), (32, 1), (32, 2)], recs
    model = ceiling("nfs", link_bps="1GbE", mtu=1500, block_size=65536, read_pct=100)
    for r in recs:
        assert r.result.errors == 0 and r.result.error_messages == [], r.result.error_messages
        assert r.status == "ok" and r.result.iops > 0
        # a working path reads near the wire's ceiling (the shaper, not the client, sets the pace)
        assert 0.80 <= r.result.mbps / model.mbps <= 1.01, (r.result.mbps, model.mbps)
    assert leftovers(PREFIX) == []


def test_over_a_slow_device_nfs_at_4_in_flight_adds_little_to_its_service_time(workdir, tmp_path):
    """patches/fio/0003-nfs-tcp-nodelay.patch: with Nagle on, each NFS request waited in the client's socket until an
    earlier one was answered — +2 ms an I/O at 1 × 4 over a 5.5 ms device (measured 2026-11-26). With TCP_NODELAY
    NFS's reads take the device's time plus the protocol's, as the direct path's plus well under 15 %."""
    from protolab.lab.device import find_blockdev, fuse_available

    if not fuse_available() or find_blockdev()[0] is None:
        pytest.skip("the device model needs FUSE and protolab-blockdev ('make deps')")
    text = plan_text(config("local", "lab:local") + config("nfs", "lab:nfs"),
                     lab='[lab.storage]\nservice_time = "5ms"\nparallelism = 16',
                     workload='{ name = "tr3808-4k", read_pct = 100 }', load="streams = 1\noio = 4",
                     method='warmup = "1s"\nduration = "3s"\nrepeats = 2\nrestore = true')
    rundir = Study(load_plan_text(text), text, "nfs", results_root=tmp_path / "r", lab_workdir=workdir).run()
    lat = {}
    for r in rundir.records():
        assert r.result.errors == 0, r.result.error_messages
        lat.setdefault(r.configuration, []).append(r.result.lat_mean_us)
    local, nfs = min(lat["local"]), min(lat["nfs"])
    assert 4800 <= local <= 5600 and nfs <= 1.15 * local, lat
    assert leftovers(PREFIX) == []
