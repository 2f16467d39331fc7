"""The pool's device model with real fio on the local path: the service time at 1 outstanding I/O and the IOPS at
saturation are within 5 % of what each preset says, the daemon's own account of its time (user.protolab.stats) agrees
with the model and with queueing arithmetic, and teardown leaves no FUSE mount or daemon behind."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from statistics import median

import pytest

from conftest import FIO, leftovers, spec
from protolab.lab.device import find_blockdev, fuse_available
from protolab.plan.storage import StorageSpec
from protolab.telemetry.devicetime import DeviceCounters, between

pytestmark = pytest.mark.lab

BLOCK = 4096
SECONDS = 3


def _need_the_daemon() -> None:
    if not fuse_available():
        pytest.skip("the device model needs FUSE (/dev/fuse)")
    if find_blockdev()[0] is None:
        pytest.skip("protolab-blockdev is not built; run 'make deps'")


def fio_randread(path: str, iodepth: int, rw: str = "randread", jobs: int = 1) -> tuple[float, float]:
    """(IOPS, mean completion latency in µs) of 4 KiB direct random reads (or ``rw``) at ``iodepth`` per job, from
    ``jobs`` fio jobs, for SECONDS."""
    out = subprocess.run([str(FIO), "--name=device", f"--filename={path}", f"--rw={rw}", f"--bs={BLOCK}",
                          "--direct=1", "--ioengine=libaio", f"--iodepth={iodepth}", f"--numjobs={jobs}",
                          "--group_reporting", "--time_based", f"--runtime={SECONDS}", "--ramp_time=0.5",
                          "--output-format=json"],
                         capture_output=True, timeout=60, check=True).stdout
    done = json.loads(out)["jobs"][0]["write" if "write" in rw else "read"]
    return done["iops"], done["lat_ns"]["mean"] / 1000


def fill(path: str, size: int) -> None:
    """Write every block once: btrfs answers reads of preallocated, never-written extents without the device."""
    done = subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={size // 2**20}",
                           "oflag=direct", "conv=notrunc"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


def device_time(device, fio_windows) -> tuple[DeviceCounters, object]:
    """What the device model counted while ``fio_windows()`` ran (its counters read before and after, as a run reads
    them around each measured window), and what that returned."""
    before = device.stats()
    out = fio_windows()
    counted = between(before, device.stats())
    assert counted is not None and counted.requests > 0
    return counted, out


def said_device(what: str, d: DeviceCounters) -> str:
    return (f"{what}: {d.reads:.0f} reads, {d.writes:.0f} writes, queue {d.mean_queue_us():.1f} µs, service "
            f"{d.mean_service_us():.1f} µs")


# Saturation: more I/Os in flight than the model's parallelism. One fio thread reaping and resubmitting ~10,000
# completions a second leaves slots idle (measured 2026-11-26: 1 job × 96 OIO gave 10,400 IOPS of hdd-array's
# 12,727, 8 jobs × 16 OIO 12,400), so the 70-spindle preset is driven by 8 jobs.
@pytest.mark.parametrize("preset, jobs, oio", [("flash", 1, 16), ("hdd-array", 8, 16)])
def test_each_preset_gives_its_service_time_and_saturation_iops_on_the_local_path(make_lab, preset, jobs, oio):
    _need_the_daemon()
    if not FIO.exists():
        pytest.skip("fio is not built; run 'make deps'")
    model = StorageSpec(model=preset)
    lab = make_lab(spec(export_size="64M", storage={"model": preset}), {"local"})
    path = lab.endpoint("local").url
    fill(path, 64 * 2**20)
    assert any(f"{lab.names.prefix}-dev" in line.split()[1] for line in open("/proc/mounts"))  # FUSE under the pool
    said_latency, said_iops = model.latency_us(BLOCK), model.saturation_iops(BLOCK)
    # The stack's own time per request drifts on this shared 2-core host: fio's 1 OIO came 3.6 % (sd) either side
    # of flash's 166 µs over 10 labs, 2026-11-28, mean +0.1 %, widest +7.6 %. So up to 3 calibrations (each snapshot
    # calibrates, as a run's does after its initialise, past the lab's start); one that is off systematically,
    # like the earlier probe's 15–25 % under, fails every one. At 1 OIO the median of 3 windows: a shared machine's
    # one slow window is not the model's figure. With a write-back cache, writes at 1 OIO are acknowledged in its
    # time: they are calibrated on their own (at hdd-array's 5.5 ms a read's overhead was 189 µs, and writes given
    # it came 18 % early, CI 2026-11-28). Writes within 7.5 %: over 12 labs their first tries came −4.1 to +6.5 % of
    # the model's 500 µs (2026-11-28), as wide as the reads'.
    tries: list[str] = []
    device = lab.blockdev
    for _ in range(3):
        lab.snapshot()
        reads_1, latency_1 = device_time(device, lambda: median(fio_randread(path, 1)[1] for _ in range(3)))
        writes_1, write_1 = device_time(device, lambda: median(fio_randread(path, 1, "randwrite")[1]
                                                               for _ in range(3))) if model.write_us else (None, None)
        described = lab.device()
        tries.append(f"{latency_1:.1f} µs with overhead {described.get('overhead_us')} µs"
                     + (f", writes {write_1:.1f} µs with overhead {described.get('write_overhead_us')} µs"
                        if write_1 is not None else ""))
        if abs(latency_1 / said_latency - 1) <= 0.05 and (write_1 is None or abs(write_1 / model.write_us - 1) <= 0.075):
            break
    reads_n, (iops_n, latency_n) = device_time(device, lambda: fio_randread(path, oio, jobs=jobs))
    figures = (f"{preset}: 1 OIO {'; '.join(tries)} (model {said_latency:.1f} µs"
               + (f", writes {model.write_us:.1f} µs" if model.write_us else "")
               + f"), {jobs} × {oio} OIO {iops_n:.0f} IOPS (model {said_iops:.0f}); load {os.getloadavg()[0]:.1f}; "
               + "; ".join(said_device(w, d) for w, d in (("1 OIO", reads_1), ("1 OIO writes", writes_1),
                                                            (f"{jobs} × {oio} OIO", reads_n)) if d is not None))
    assert abs(latency_1 / said_latency - 1) <= 0.05, figures
    assert abs(iops_n / said_iops - 1) <= 0.05, figures
    assert latency_n > 1.5 * latency_1, figures  # beyond its parallelism, requests queue
    # The daemon's own account (what a run's records carry as device_time): at 1 OIO no request waits for a server
    # and each is served for the model's time (the service, then the transfer at the throughput cap) — whatever the
    # stack around it adds, since a request's arrival is the model's (its overhead before it reached the daemon).
    assert abs(reads_1.mean_service_us() / said_latency - 1) <= 0.10, figures
    assert reads_1.mean_queue_us() <= 0.05 * model.service_us, figures
    # Beyond the parallelism P, N requests in flight of service S each: the servers are always busy, so they take
    # turns, and each request waits (N / P - 1) × S for a server. The N fio keeps in flight are not all in the
    # daemon at every moment (a completion is reaped and resubmitted through the stack first): within 20 % under.
    queue = (jobs * oio / model.servers - 1) * model.service_us
    assert 0.8 * queue <= reads_n.mean_queue_us() <= 1.05 * queue, f"{figures}; (N / P - 1) × S = {queue:.0f} µs"
    assert abs(reads_n.mean_service_us() / said_latency - 1) <= 0.10, figures  # still each its own service time
    if write_1 is not None:  # the write-back cache: a write is acknowledged in write_time and holds no spindle
        write_n, _ = fio_randread(path, oio, "randwrite", jobs)
        figures += f"; writes at {jobs} × {oio} OIO {write_n:.0f} IOPS"
        assert abs(write_1 / model.write_us - 1) <= 0.075, figures
        # acknowledged from the write-back cache in its own time, holding no server: no queue
        assert abs(writes_1.mean_service_us() / model.write_us - 1) <= 0.10, figures
        assert writes_1.mean_queue_us() <= 0.05 * model.write_us and writes_1.writes >= writes_1.requests * 0.99, figures
        assert write_n > 1.5 * said_iops, figures  # beyond the spindles' saturation


def test_teardown_leaves_no_fuse_mount_or_daemon(make_lab):
    _need_the_daemon()
    lab = make_lab(spec(storage={"model": "hdd-array"}), {"local"})
    daemons = [r.extra["pid"] for r in lab._record.find("process") if r.name == "protolab-blockdev"]
    assert len(daemons) == 1 and os.path.exists(f"/proc/{daemons[0]}")
    described = lab.device()
    assert described["model"] == "hdd-array" and described["caches"]["local"].startswith("none")
    # reads and write-back writes each calibrated, as the model holds them (5.5 ms and 0.5 ms)
    assert 0 < described["write_overhead_us"] < StorageSpec(model="hdd-array").write_us, described
    assert 0 < described["overhead_us"] < StorageSpec(model="hdd-array").service_us, described
    lab.down()
    assert not os.path.exists(f"/proc/{daemons[0]}/cmdline") or not open(f"/proc/{daemons[0]}/cmdline").read()
    assert leftovers(lab.spec.prefix) == []


def test_the_daemon_is_calibrated_through_its_file_and_refuses_anything_else(make_lab):
    """The daemon's runtime control (an extended attribute of its file): a read is held as long as told while it
    calibrates, the model is back after "off", and other names or values are refused."""
    _need_the_daemon()
    lab = make_lab(spec(export_size="64M", storage={"model": "flash"}), {"local"})
    path = lab.endpoint("local").url
    fill(path, 64 * 2**20)
    device = lab._pool.device
    served = str(device.served)
    refusals = [("user.protolab.other", b"1", errno.ENOTSUP), ("user.protolab.calibrate", b"-5", errno.EINVAL),
                ("user.protolab.calibrate", b"5ms", errno.EINVAL), ("user.protolab.overhead", b"off", errno.EINVAL),
                ("user.protolab.write_overhead", b"1e12", errno.EINVAL)]
    for name, value, code in refusals:
        with pytest.raises(OSError) as refused:
            os.setxattr(served, name, value)
        assert refused.value.errno == code, (name, value)
    transfer = 1e6 * BLOCK / StorageSpec(model="flash").throughput_bps
    os.setxattr(served, "user.protolab.calibrate", b"2000000")
    try:
        held = device.probe_us(path, 64 * 2**20, 0.5)
    finally:
        os.setxattr(served, "user.protolab.calibrate", b"off")
    assert 2000 + transfer <= held < 2000 + transfer + 1000, held
    said = StorageSpec(model="flash").latency_us(BLOCK)
    back = device.probe_us(path, 64 * 2**20, 0.5)
    assert 0.7 * said < back < 1.5 * said, f"after 'off': {back:.1f} µs, the model says {said:.1f} µs"
    assert 0 < lab.device()["overhead_us"] < said  # the pool calibrated when it was made

