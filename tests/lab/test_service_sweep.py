"""A swept service time on one running lab (plan.sweep): the daemon takes a new model through user.protolab.model,
the pool re-calibrates once per model, and real fio on the local path sees each service time within the device
model's bounds (tests/lab/test_device_model.py); the channel refuses a model it cannot serve and keeps the old."""

from __future__ import annotations

import errno
import os
from statistics import median

import pytest
from test_device_model import _need_the_daemon, fill, fio_randread

from conftest import FIO, spec

pytestmark = pytest.mark.lab

SPAN = 64 * 2**20


def _within(lab, path: str, us: int) -> tuple[float, list[str]]:
    """Median 1-OIO latency of 3 windows at ``us``, re-calibrating up to 3 times (the shared host's drift, as
    test_device_model's bounds allow for): the last figure and every try's."""
    tries = []
    for attempt in range(3):
        if attempt:
            lab._pool.overheads.pop(lab._pool.device.spec, None)  # measure this model's overhead again
        lab.set_service_time(us)
        latency = median(fio_randread(path, 1)[1] for _ in range(3))
        tries.append(f"{latency:.1f} µs (overhead {lab._pool.overhead.read_us:.1f} µs)")
        if abs(latency / us - 1) <= 0.05:
            break
    return latency, tries


def test_two_service_times_are_served_by_one_running_lab_each_within_the_models_bounds(make_lab):
    _need_the_daemon()
    if not FIO.exists():
        pytest.skip("fio is not built; run 'make deps'")
    lab = make_lab(spec(export_size="64M", storage={"service_time": "150us", "parallelism": 8}), {"local"})
    path = lab.endpoint("local").url
    fill(path, SPAN)
    device = lab._pool.device
    pid_before = [r.extra["pid"] for r in lab._record.find("process") if r.name == "protolab-blockdev"]
    results = {}
    for us in (500, 1500):
        results[us] = _within(lab, path, us)
        assert device.model_in_effect() == f"service={us * 1000} spread=0 parallelism=8 rate=0 write=0"
    said = "; ".join(f"{us} µs: {', '.join(t)}" for us, (_, t) in results.items())
    for us, (latency, _) in results.items():
        assert abs(latency / us - 1) <= 0.05, said
    # back to 500 µs: its overhead is the one measured before (no calibration), and the model is served again
    known = dict(lab._pool.overheads)
    lab.set_service_time(500)
    assert lab._pool.overheads == known and lab._pool.overhead == next(v for k, v in known.items()
                                                                        if k.service_us == 500)
    again = median(fio_randread(path, 1)[1] for _ in range(3))
    assert abs(again / 500 - 1) <= 0.075, f"500 µs again: {again:.1f} µs; {said}"
    # nothing was re-provisioned: the same daemon serves the same pool
    assert [r.extra["pid"] for r in lab._record.find("process") if r.name == "protolab-blockdev"] == pid_before


REFUSED = [b"service=1000 colour=3", b"service=1000 spread=2000", b"parallelism=0", b"parallelism=1025",
           b"parallelism=2.5", b"service=-1", b"service", b"", b"service=1e12", b"service=1000  parallelism=x"]


def test_the_model_channel_refuses_a_model_it_cannot_serve_and_keeps_the_one_it_has(make_lab):
    _need_the_daemon()
    lab = make_lab(spec(export_size="64M", storage={"service_time": "150us", "parallelism": 8}), {"local"})
    served = str(lab._pool.device.served)
    before = lab._pool.device.model_in_effect()
    assert before == "service=150000 spread=0 parallelism=8 rate=0 write=0"
    for value in REFUSED:
        with pytest.raises(OSError) as refused:
            os.setxattr(served, "user.protolab.model", value)
        assert refused.value.errno == errno.EINVAL, value
        assert lab._pool.device.model_in_effect() == before, value
    os.setxattr(served, "user.protolab.model", b"parallelism=1024 service=0")  # the widest it takes, and 0 µs
    assert lab._pool.device.model_in_effect() == "service=0 spread=0 parallelism=1024 rate=0 write=0"
