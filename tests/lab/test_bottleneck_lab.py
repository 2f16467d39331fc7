"""What the bottleneck rules are named from, on the real lab: each server's busiest thread, each role's wait for a
CPU, softirq per core, fio's busiest job; and a report whose every row says what limited it."""

from __future__ import annotations

import os

import pytest
from test_study import config, plan_text, study, workdir  # noqa: F401  (fixture)

from protolab.analysis.bottleneck import assess
from protolab.analysis.wire import ceiling
from protolab.report import tables

pytestmark = pytest.mark.lab


@pytest.mark.xfail(strict=False, reason="tgtd's threads alive at the window's end held < 90 % of its CPU in some "
                   "windows on this 2-core machine (2026-11-23, twice in full runs); the bottleneck rules then use "
                   "the process figure — the sampling is the open question, not the rules")
def test_lab_windows_carry_thread_wait_and_softirq_data(workdir, tmp_path):  # noqa: F811
    text = plan_text(config("iscsi", "lab:iscsi") + config("nbd", "lab:nbd"), lab='[lab.link]\nrate = "1GbE"',
                     workload='"seq-read-64k"', load="streams = 2\noio = 8")
    rundir = study(text, workdir, tmp_path).run()
    by = {r.configuration: r for r in rundir.records()}
    for name, server in (("iscsi", "tgtd"), ("nbd", "nbdkit")):
        r = by[name]
        t = r.telemetry
        th = t.server_threads[server]
        assert t.servers_cpu_s[server] > 0 and th.cpu_s <= t.servers_cpu_s[server] + 0.05
        assert len(t.cores_softirq_s) == os.cpu_count()
        assert set(t.roles_cpu_wait_s) >= {"servers", "loadgen"}  # cgroup v2 with PSI on this machine
        assert 0 < r.result.job_cpu_share_max <= 1.05  # a job is one thread
        ceil = ceiling(name, link_bps="1GbE", block_size=65536, read_pct=100).iops
        assert assess([r], ceil).kind in ("wire", "cpu", "none")
    # tgtd keeps its threads (event loop + backing-store workers): the live ones hold its CPU
    tgtd = by["iscsi"].telemetry.server_threads["tgtd"]
    assert tgtd.threads > 1 and tgtd.live_cpu_s >= 0.9 * by["iscsi"].telemetry.servers_cpu_s["tgtd"]
    # nbdkit's per-connection threads end with fio's connections: the live ones miss its CPU, so the rules
    # fall back to the process figure
    nbdkit = by["nbd"].telemetry.server_threads["nbdkit"]
    assert nbdkit.live_cpu_s < 0.9 * by["nbd"].telemetry.servers_cpu_s["nbdkit"]
    data = tables.build(rundir.manifest(), rundir.records())
    assert {k[2] for k in data.bottlenecks} == {"iscsi", "nbd"}
    assert all(b.label for b in data.bottlenecks.values())
    assert len([f for f in data.findings if f.kind == "bottleneck"]) >= 2


def test_each_cause_induced_on_purpose_is_the_one_the_report_names(workdir, tmp_path):  # noqa: F811
    """The wire (a 10 Mbit/s link), the server's CPU (its cgroup capped at a tenth of a core) and the load
    generator's CPU (capped likewise), each in its own configuration over one NBD export; the uncapped
    configuration beside them is held by none of these."""
    # "free" on 10GbE: on a quiet machine NBD at 4 in flight fills the default 1GbE (99.5 % of its ceiling)
    text = plan_text(config("free", "lab:nbd", 'link = { rate = "10GbE" }')
                     + config("wire", "lab:nbd", 'link = { rate = "10mbit" }')
                     + config("servers-capped", "lab:nbd", "cpu_limit = { servers = 0.1 }")
                     + config("loadgen-capped", "lab:nbd", "cpu_limit = { loadgen = 0.1 }"),
                     workload='"tr3808-4k"', load="streams = 1\noio = 4")
    rundir = study(text, workdir, tmp_path).run()
    by = {r.configuration: r for r in rundir.records()}
    assert by["servers-capped"].telemetry.roles_cpu_limit == {"servers": pytest.approx(0.1)}
    assert by["loadgen-capped"].telemetry.roles_cpu_limit == {"loadgen": pytest.approx(0.1)}
    assert not by["free"].telemetry.roles_cpu_limit and not by["wire"].telemetry.roles_cpu_limit  # lifted again
    assert by["servers-capped"].telemetry.roles_cpu_throttled_s["servers"] > 0
    # the capped roles used about their tenth of a core: the limit held them, not the machine
    for name, role in (("servers-capped", "servers"), ("loadgen-capped", "loadgen")):
        t = by[name].telemetry
        assert 0.08 <= t.roles_cpu_s[role] / t.elapsed_s <= 0.12, (name, t.roles_cpu_s, t.elapsed_s)
    assert by["free"].result.iops > 2 * max(by[n].result.iops for n in ("wire", "servers-capped", "loadgen-capped"))
    data = tables.build(rundir.manifest(), rundir.records())
    held = {k[2]: b for k, b in data.bottlenecks.items()}
    assert held["wire"].kind == "wire", held["wire"]
    assert (held["servers-capped"].kind, held["servers-capped"].what, held["servers-capped"].held.scope) == \
        ("cpu", "nbdkit", "limit"), held["servers-capped"]
    assert (held["loadgen-capped"].kind, held["loadgen-capped"].what, held["loadgen-capped"].held.scope) == \
        ("cpu", "fio", "limit"), held["loadgen-capped"]
    assert held["free"].kind != "wire" and (held["free"].held is None or held["free"].held.scope != "limit")
    said = {f.configurations[0]: f.text for f in data.findings if f.kind == "bottleneck"}
    assert "held by nbdkit's CPU limit" in said["servers-capped"] and "0.1-core limit" in said["servers-capped"]
    assert "held by fio's CPU limit" in said["loadgen-capped"] and "held by the wire" in said["wire"]


def test_a_saturated_device_model_is_named_as_the_array(workdir, tmp_path):  # noqa: F811
    """The storage induced on purpose: a device model of 2 servers × 2 ms (1,000 IOPS with both busy) under the
    pool, 8 I/Os in flight on the direct path and over NBD: both are held by the array; at 1 I/O in flight
    neither is (the array then answers one I/O at a time, at half its saturation)."""
    from protolab.lab.device import find_blockdev, fuse_available

    if not fuse_available() or find_blockdev()[0] is None:
        pytest.skip("the device model needs FUSE and protolab-blockdev ('make deps')")
    text = plan_text(config("local", "lab:local") + config("nbd", "lab:nbd"),
                     lab='[lab.storage]\nservice_time = "2ms"\nparallelism = 2',
                     workload='{ name = "tr3808-4k", read_pct = 100 }',
                     load="streams = 1\noio = 8\n[[load_points]]\nstreams = 1\noio = 1")
    rundir = study(text, workdir, tmp_path).run()
    data = tables.build(rundir.manifest(), rundir.records())
    held = [(k[2], b) for k, b in data.bottlenecks.items()]
    by_oio = {(r.configuration, r.oio_per_stream): r.result.iops for r in rundir.records()}
    for c in ("local", "nbd"):
        saturated = [b for cc, b in held if cc == c and b.device_share and b.device_share > 0.7]
        quiet = [b for cc, b in held if cc == c and b.device_share and b.device_share < 0.7]
        assert saturated and all(b.kind == "storage" and b.label.startswith("array ") for b in saturated), held
        assert quiet and all(b.kind != "storage" for b in quiet), held
        assert 900 <= by_oio[(c, 8)] <= 1100, by_oio  # the model's 1,000 IOPS, within 10 %
    said = [f.text for f in data.findings if f.kind == "bottleneck"]
    assert any("held by the array" in t for t in said), said
