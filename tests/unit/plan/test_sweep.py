"""[sweep]: the grammar and its one-line refusals, the expansion (outer loop, configurations interleaved, ids and
coordinates), the model at a swept service time, adaptive repeats per swept value, and a plan without a sweep
stored as before it existed."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.coordinates import point_of, role, value_label
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.plan.sweep import at_service_time, device_model_at, sweep_values

LAB = """
name = "s"
baseline = "direct"
workloads = ["tr3808-4k"]
[[configurations]]
name = "direct"
target = "lab:local"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
streams = 1
oio = 1
[method]
repeats = 2
"""
MODEL = '[lab.storage]\nservice_time = "150us"\nspread = "50us"\nparallelism = 8\n'


def _plan(sweep: str, storage: str = MODEL, base: str = LAB):
    return load_plan_text(base + storage + "[sweep]\n" + sweep, source="p.toml")


def test_swept_values_are_the_outer_loop_with_configurations_interleaved_and_in_each_cells_id_and_coords():
    plan = _plan('service_time = ["0us", "150us", "1.5ms"]\nlink_rate = ["100mbit", "1GbE"]\n')
    cells = expand(plan)
    assert len(cells) == 3 * 2 * 2 * 2  # service times × link rates × repeats × configurations
    assert [(c.coords()["service_time"], c.coords()["link_rate"], c.configuration.name) for c in cells[:4]] == [
        (0, 100, "direct"), (0, 100, "iscsi"), (0, 100, "direct"), (0, 100, "iscsi")]
    assert cells[4].coords() == {"service_time": 0, "link_rate": 1000}
    assert cells[-1].id == "tr3808-4k__iscsi__h1s1q1__st1500__lr1000__r2"
    assert len({c.id for c in cells}) == len(cells)
    assert sweep_values({"workload": "w", "service_time": 150, "fill": 25}) == {"service_time": 150}
    assert "swept: service time 0, 150, 1500 µs; link rate 100, 1000 Mbit/s" in plan.method_summary()
    assert role("service_time") == role("link_rate") == "point"
    assert value_label("service_time", 150) == "service_time 150 µs"


@pytest.mark.parametrize("sweep, words", [
    ('service_time = ["150us", "0us"]\n', "service_time values must ascend"),
    ('service_time = ["150us", "150us"]\n', "service_time values must ascend"),
    ('service_time = ["1.5us"]\n', "whole number of µs"),
    ('service_time = ["fast"]\n', "service_time must be a time like"),
    ('service_time = []\n', "service_time must be a list of 1 to 20"),
    ('service_time = "150us"\n', "service_time must be a list"),
    ('link_rate = ["1.5kbit"]\n', "whole number of Mbit/s"),
    ('link_rate = ["10MB/s"]\n', "rate"),
    ('link_rate = [100]\n', "like '100mbit'"),
    ('colour = ["red"]\n', "colour"),
    ('service_time = ["0us"]\ncrossover_band = 0\n', "crossover_band"),
])
def test_a_sweep_it_cannot_read_is_refused_in_one_line_naming_the_field(sweep, words):
    with pytest.raises(PlanError) as e:
        _plan(sweep)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_swept_service_time_needs_the_labs_device_model_and_a_sweep_needs_the_lab():
    with pytest.raises(PlanError, match="the pool has no device model to set") as e:
        _plan('service_time = ["0us"]\n', storage="")
    assert "\n" not in str(e.value)
    local = LAB.replace('"lab:local"', '"/tmp/x"').replace('"lab:iscsi"', '"/tmp/y"')
    with pytest.raises(PlanError, match="a swept service time or link rate is the embedded lab's"):
        _plan('link_rate = ["1GbE"]\n', storage="", base=local)
    assert _plan('link_rate = ["100mbit"]\n', storage="").sweep.link_rate == ["100mbit"]  # the RAM pool's links
    with pytest.raises(PlanError, match=r"not with \[stage.fill\] or \[stage.age\] yet"):
        _plan('service_time = ["0us"]\n', storage=MODEL + "[stage.fill]\nlevels = [50, 100]\n")


def test_a_swept_service_time_keeps_the_models_shape_and_names_every_figure():
    plan = _plan('service_time = ["0us", "600us"]\n', storage='[lab.storage]\nmodel = "flash"\n')
    at = at_service_time(plan.lab.device, 600)
    # flash: 150 µs ± 50 µs ×2, 250 MB/s, no cache — the spread scaled with the mean (a third of it)
    assert (at.service_us, at.spread_us, at.servers, at.throughput_bps, at.cache_bytes) == (600, 200, 2, 250e6, 0)
    assert at.name == "600us±200us ×2, 250MB/s, no cache"
    assert at_service_time(plan.lab.device, 0).name == "0us ×2, 250MB/s, no cache"
    assert device_model_at(plan.lab.device, {"service_time": 600}) == at
    assert device_model_at(plan.lab.device, {}) == plan.lab.device


def test_a_plan_without_a_sweep_is_stored_as_before_it_existed_and_one_with_it_keeps_it():
    assert "sweep" not in load_plan_text(LAB, source="p.toml").model_dump(mode="json")
    assert _plan('service_time = ["0us"]\n').model_dump(mode="json")["sweep"]["service_time"] == ["0us"]


def test_adaptive_repeats_decide_at_each_swept_value_on_its_own_records():
    from protolab.plan.sweep import SweepStep
    from protolab.run.schedule import _iops

    class Rec:
        def __init__(self, st, iops, c="direct"):
            self.workload, self.load_index, self.failed, self.configuration, self.repeat = "w", 0, False, c, 1
            self.dimensions = {"service_time": st}
            self.result = type("R", (), {"iops": iops})

    recs = [Rec(0, 100.0), Rec(150, 50.0)]
    assert _iops(recs, "w", 0, (SweepStep("service_time", 150),)) == {"direct": [50.0]}
    assert _iops(recs, "w", 0, ()) == {}  # a record at a swept value is not the plan's unswept point


def test_a_records_point_carries_the_swept_value_with_its_unit():
    class Rec:
        coords = {"workload": "w", "configuration": "a", "load": 0, "repeat": 1, "service_time": 1500}
        hosts, streams_per_host, oio_per_stream, total_oio = 1, 1, 1, 1

    p = point_of(Rec())
    assert p.get("service_time") == 1500 and p.label == "service_time 1500 µs · 1×1×1=1"


def test_the_lab_testbed_sets_a_swept_service_time_once_per_value_and_a_swept_rate_over_the_configurations():
    from protolab.run.labbed import LabTestbed
    from protolab.run.progress import Silent

    plan = _plan('service_time = ["0us", "500us"]\nlink_rate = ["100mbit"]\n')
    calls: list = []

    class Lab:  # the lab's side is real in tests/lab/test_service_sweep.py; here only what the testbed asks of it
        def set_service_time(self, us):
            calls.append(("service", us))

        def set_link(self, link):
            calls.append(("link", link.rate_bps, link.mtu))

        def device(self):
            return {"model": "150us±50us ×8, no throughput cap, no cache"}

        def describe(self):
            return ""

    tb = LabTestbed(plan, None, None, Silent(), None)
    tb.lab = Lab()
    iscsi = plan.configuration("iscsi").model_copy(update={"link": {"mtu": 9000, "rate": "10GbE"}})
    for cell in expand(plan)[:4]:
        tb.set_sweep(sweep_values(cell.coords()))
        tb.set_link(cell.configuration)
    tb.set_sweep({"service_time": 500, "link_rate": 100})
    tb.set_link(iscsi)
    assert calls == [("service", 0), ("link", 100_000_000, 1500), ("service", 500), ("link", 100_000_000, 9000)]
    # the run's description says the model is swept (the Environment section shows it beside the figures)
    assert tb.describe()["device"]["swept"].startswith("service time per cell: 0us, 500us (plan.sweep;")


SEEDED = LAB + '[[seed_findings]]\nsaid = "All within 9 %."\nmetric = "iops"\nclaims = [{ within = 9 }]\n'


def test_the_chosen_point_is_the_plans_own_service_time_and_link_rate_on_its_swept_coordinates():
    from protolab.plan.sweep import chosen, chosen_words

    plan = _plan('service_time = ["150us", "5.5ms"]\n', storage='[lab.storage]\nmodel = "hdd-array"\n', base=SEEDED)
    assert chosen(plan) == {"service_time": 5500}
    assert chosen_words(plan) == "service time 5.5 ms ([lab.storage] hdd-array)"
    both = _plan('service_time = ["150us"]\nlink_rate = ["100mbit", "1GbE"]\n')
    assert chosen(both) == {"service_time": 150, "link_rate": 1000}  # [lab.link]'s default rate, 1GbE
    assert chosen(load_plan_text(LAB, source="p.toml")) == {}


@pytest.mark.parametrize("sweep, storage, words", [
    ('service_time = ["500us", "1.5ms"]\n', '[lab.storage]\nmodel = "hdd-array"\n',
     'sweep.service_time: the seed\'s claims are judged at the plan\'s [lab.storage] service time, 5500 µs, which '
     'the sweep does not measure; add "5500us" to sweep.service_time'),
    ('link_rate = ["100mbit", "10GbE"]\n', "",
     'sweep.link_rate: the seed\'s claims are judged at the plan\'s [lab.link] rate, 1000 Mbit/s, which the sweep '
     'does not measure; add "1000mbit" to sweep.link_rate'),
    ('link_rate = ["100mbit"]\n', '[lab.link]\nrate = "none"\n',
     "sweep.link_rate: the seed's claims are judged at the plan's own link rate, and [lab.link] has none; give "
     "[lab.link] a rate among the sweep's values"),
])
def test_a_plan_with_seed_claims_whose_sweep_misses_its_chosen_value_is_refused_in_one_line(sweep, storage, words):
    with pytest.raises(PlanError) as e:
        _plan(sweep, storage=storage, base=SEEDED)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    _plan(sweep, storage=storage)  # without seed claims the sweep need not hold the plan's own value


def test_run_device_model_runs_one_array_so_a_swept_service_time_is_dropped():
    from protolab.plan.load import load_builtin

    plan, _ = load_builtin("tr3808", "quick", "flash")
    assert plan.sweep is None and plan.lab.device.name == "flash"
    kept, _ = load_builtin("exchange", "quick", "flash")
    assert kept.sweep.link_rate == ["400mbit", "1250mbit", "5gbit"]
