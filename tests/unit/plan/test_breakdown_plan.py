"""`[method] breakdown` (plan.breakdown): off by default and left out of a stored plan when off, the capture's
sub-window, and one-line refusals naming the field."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.breakdown import sub_window
from protolab.plan.load import load_plan_text

PLAN = """name = "b"
baseline = "a"
workloads = [{{ name = "r", block_size = "4k", read_pct = 100, random_pct = 100 }}]
load_points = [{{ streams = 1, oio = 1 }}]
[method]
repeats = 2
duration = "{duration}"
{method}
[[configurations]]
name = "a"
target = "{target}"
{more}"""


def _plan(method="breakdown = true", target="lab:nbd", duration="6s", more=""):
    return load_plan_text(PLAN.format(method=method, target=target, duration=duration, more=more), source="p.toml")


def test_off_by_default_and_absent_from_a_stored_plan_when_off():
    assert _plan("").method.breakdown is False and "breakdown" not in _plan("").method.model_dump()
    on = _plan()
    assert on.method.breakdown is True and on.method.model_dump()["breakdown"] is True
    assert "a capture at both ends of the link per cell (breakdown)" in on.method.summary()


def test_the_sub_window_starts_1s_in_and_lasts_a_third_of_the_window_at_most_2s():
    assert sub_window(30.0) == (1.0, 2.0)
    assert sub_window(4.5) == (1.0, 1.5)
    assert sub_window(3.0) == (1.0, 1.0)  # the shortest window: one second before it, one after


@pytest.mark.parametrize("kw, said", [
    ({"target": "/var/tmp/protolab-unit/b.dat"}, "p.toml: method.breakdown: the capture points are the embedded "
     "lab's"),
    ({"duration": "2s"}, "p.toml: method.breakdown: method.duration = 2s; the capture starts 1s into the window"),
    ({"method": "breakdown = 1"}, "p.toml:8: method.breakdown: Input should be a valid boolean"),
])
def test_a_plan_it_cannot_serve_is_one_line_naming_the_field(kw, said):
    with pytest.raises(PlanError) as e:
        _plan(**kw)
    assert str(e.value).startswith(said) and "\n" not in str(e.value)


def test_a_kernel_path_in_a_guest_is_refused():
    kernel = _plan("", target="lab:nvme-tcp", more="[hypervisor]\n")
    assert kernel.method.breakdown is False  # the plan itself is fine without breakdown
    with pytest.raises(PlanError) as e:
        _plan(target="lab:nvme-tcp", more="[hypervisor]\n")
    assert str(e.value).startswith("p.toml: method.breakdown: configuration a is served or reached by a guest's "
                                   "kernel")
