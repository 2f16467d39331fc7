"""A plan asking for link delay or loss on a kernel without netem is refused by the pre-flight (validate, run, lab up)
in one line naming the field, before anything is created; the probe is faked here (lab.netns.kernel_netem)."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.load import load_plan_text
from protolab.plan.preflight import Environment, preflight

PLAN = """
name = "n"
baseline = "a"
workloads = ["tr3808-4k"]
[lab]
prefix = "pln"
{lab}
[[configurations]]
name = "a"
target = "lab:nbd"
[[configurations]]
name = "b"
target = "lab:nbd"
{b}
[[load_points]]
streams = 1
oio = 1
[method]
duration = "2s"
repeats = 1
"""

MESSAGE = ("link delay and loss need the kernel's netem qdisc (sch_netem), which this kernel does not have; remove "
           "delay and loss_pct, or run on a kernel with netem")


@pytest.mark.parametrize("lab, b, field", [
    ('link = { delay = "1ms" }', "", "lab.link.delay"),
    ("link = { loss_pct = 0.5 }", "", "lab.link.loss_pct"),
    ("", 'link = { delay = "500us" }', "configurations[1] (b).link.delay"),
    ("", "link = { mtu = 9000, loss_pct = 1 }", "configurations[1] (b).link.loss_pct"),
])
def test_delay_or_loss_without_netem_is_refused_naming_the_field(lab, b, field):
    plan = load_plan_text(PLAN.format(lab=lab, b=b))
    with pytest.raises(PlanError) as e:
        preflight(plan, "p.toml", Environment(netem=False))
    assert str(e.value) == f"p.toml: {field}: {MESSAGE}"
    for known in (True, None):  # netem there, or the kernel says nothing: the lab's own probe decides at up
        preflight(plan, "p.toml", Environment(netem=known))


def test_links_without_delay_or_loss_need_no_netem():
    plan = load_plan_text(PLAN.format(lab='link = { rate = "1GbE", mtu = 9000 }', b='link = { delay = "0us" }'))
    preflight(plan, "p.toml", Environment(netem=False))
