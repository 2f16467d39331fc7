"""`[[faults]]` in a plan (plan.faults): the model, one-line refusals naming the field, the plans it refuses, and
the `fault` coordinate of the expansion ("none" measured too)."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.coordinates import AXES, point_of, role
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.run.recording import coords

PLAN = """name = "f"
baseline = "nbd"
workloads = [{{ name = "w", block_size = "4k", read_pct = 100, random_pct = 100, oio = 4 }}]
{top}
[lab]
storage_ports = 2
{lab}
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
{configs}
[[load_points]]
streams = 2
{points}
[method]
warmup = "1s"
duration = "{duration}"
repeats = 2
{faults}
"""
DOWN = '[[faults]]\nname = "port0-down"\nkind = "link_down"\nat = "2s"\nduration = "3s"\nport = 0\n'
STALL = '[[faults]]\nname = "stall"\nkind = "array_stall"\nat = 1\nduration = "500ms"\n'
MODEL = '[lab.storage]\nservice_time = "100us"\nparallelism = 16'
LIO = ('[[configurations]]\nname = "lio"\ntarget = "lab:iscsi"\nserver = "lio"\n'
       'iscsi = { replacement_timeout = "5s", noop_out_interval = 1, noop_out_timeout = "1s" }')


def _plan(faults: str = DOWN, *, duration: str = "10s", lab: str = "", configs: str = "", points: str = "",
          top: str = ""):
    return load_plan_text(PLAN.format(faults=faults, duration=duration, lab=lab, configs=configs, points=points,
                                      top=top), source="p.toml")


def _refused(**kw) -> str:
    with pytest.raises(PlanError) as e:
        _plan(**kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("p.toml")
    return msg


def test_a_fault_is_plan_data_with_bounded_times_and_a_port():
    plan = _plan(DOWN + STALL.replace("at = 1", 'at = "6s"'), lab=MODEL)
    down, stall = plan.faults
    assert (down.kind, down.at, down.duration, down.link_port, down.end) == ("link_down", 2.0, 3.0, 0, 5.0)
    assert (stall.kind, stall.at, stall.duration, stall.port) == ("array_stall", 6.0, 0.5, None)
    assert down.summary() == "port0-down: link of storage port 0 down at 2s for 3s"
    assert stall.summary() == "stall: array stalled at 6s for 0.5s"
    assert "fault port0-down: link of storage port 0 down" in plan.method_summary()
    all_ports = _plan(DOWN.replace("port = 0", 'port = "all"')).faults[0]
    assert all_ports.link_port is None and "every storage port's link down" in all_ports.summary()
    dumped = plan.model_dump(mode="json")
    assert dumped["faults"][0] == {"name": "port0-down", "kind": "link_down", "at": 2.0, "duration": 3.0, "port": 0}
    assert "faults" not in _plan("").model_dump(mode="json")  # a plan without faults is stored as before


@pytest.mark.parametrize("entry, field, words", [
    ('kind = "unplug"', "faults[0].kind", "kind must be one of link_down, server_restart, array_stall"),
    ('at = "500ms"', "faults[0].at", "at must be at least 1s"),
    ('duration = 0', "faults[0].duration", "duration must be more than 0"),
    ('duration = "301s"', "faults[0].duration", "at most 300s"),
    ('port = -1', "faults[0].port", "port must be a storage port's number"),
    ('port = true', "faults[0].port", "port must be a storage port's number"),
    ('name = "none"', "faults[0].name", "'none' is the value of the cells measured with no fault"),
    ('name = "a b"', "faults[0].name", "fault name 'a b' is not allowed"),
    ('command = "reboot"', "faults[0].command", "unknown field"),
])
def test_every_refusal_of_an_entry_is_one_line_naming_the_field(entry, field, words):
    key = entry.split(" =")[0]
    faults = "\n".join(line for line in DOWN.splitlines() if not line.startswith(key + " ")) + "\n" + entry + "\n"
    msg = _refused(faults=faults)
    assert field in msg and words in msg, msg


@pytest.mark.parametrize("kw, words", [
    ({"faults": DOWN.replace("port = 0", "port = 2")},
     "faults[0] (port0-down).port: storage port 2 does not exist (lab.storage_ports = 2)"),
    ({"faults": DOWN, "duration": "5s"}, "faults[0] (port0-down): at + duration = 5s must end at least 1s before"),
    ({"faults": STALL}, "faults[0] (stall).kind: array_stall needs the pool's device model"),
    ({"faults": STALL.replace("array_stall", "server_restart").replace('"stall"', '"rs"'),
      "configs": '[[configurations]]\nname = "local"\ntarget = "lab:local"'},
     "faults[0] (rs).kind: configuration local (lab:local) has no server to restart"),
    ({"faults": DOWN + DOWN}, "faults: names must be unique; repeated: port0-down"),
    ({"faults": DOWN, "points": "[[load_points]]\nhosts = 2\nstreams = 1"}, "faults: load point with 2 hosts"),
    ({"faults": STALL.replace("array_stall", "server_restart").replace('"stall"', '"rs"'), "configs": LIO,
      "top": '[hypervisor]\nvcpus = 1'},
     "faults[0] (rs).kind: server_restart with [hypervisor] is not done yet (configuration lio's server runs in "
     "the storage server guest's kernel, which protolab does not restart or stall); remove it or use link_down"),
    ({"faults": STALL, "lab": MODEL, "top": '[hypervisor]\nvcpus = 1'},
     "faults[0] (stall).kind: array_stall with [hypervisor] is not done yet (only link_down is measured through "
     "guests)"),
    ({"faults": DOWN, "top": '[hypervisor]\nvms_per_host = 2'},
     "faults: hypervisor.vms_per_host = 2: a fault's 10 ms timeline is read from one guest's fio"),
    ({"faults": STALL.replace("port", "x") + 'port = 1\n', "lab": MODEL},
     "port: only a link_down fault takes a port (this one is array_stall)"),
])
def test_plans_a_fault_cannot_run_in_are_refused_in_one_line(kw, words):
    assert words in _refused(**kw)


def test_faults_need_the_lab():
    text = PLAN.format(faults=DOWN, duration="10s", lab="", configs="", points="", top="")
    text = text.replace('target = "lab:nbd"', 'target = "/var/tmp/protolab-unit/t.dat"')
    text = text.replace('target = "lab:iscsi"', 'target = "/var/tmp/protolab-unit/t.dat"')
    text = text.replace("[lab]\nstorage_ports = 2\n", "")
    with pytest.raises(PlanError) as e:
        load_plan_text(text, source="p.toml")
    assert str(e.value) == ("p.toml: faults: a fault is done by the embedded lab (its links, servers and device "
                            "model); use lab: targets or remove [[faults]]")


def test_the_fault_is_a_point_coordinate_and_none_is_measured_too():
    plan = _plan(DOWN + STALL.replace("at = 1", 'at = "6s"'), lab=MODEL)
    cells = expand(plan)
    assert len(cells) == 3 * 2 * 2  # (none, port0-down, stall) × repeats × configurations
    assert [c.coords()["fault"] for c in cells[:4]] == ["none"] * 4
    assert [(c.configuration.name, c.repeat) for c in cells[:4]] == [("nbd", 1), ("iscsi", 1), ("nbd", 2),
                                                                      ("iscsi", 2)]
    faulted = cells[4]
    assert faulted.id == "w__nbd__h1s2q4__fault-port0-down__r1"
    assert faulted.step("fault").fault == plan.faults[0] and cells[0].step("fault").fault is None
    assert role("fault") == "point" and "fault" in AXES
    assert coords(faulted)["fault"] == "port0-down"
    assert len({c.id for c in cells}) == len(cells)

    class Rec:
        def __init__(self, c):
            self.coords, self.hosts, self.streams_per_host = coords(c), 1, 2
            self.oio_per_stream, self.total_oio = 4, 8

    assert point_of(Rec(faulted)).label == "fault port0-down · 1×2×4=8"


def test_the_failover_study_loads_at_both_scales_with_its_faults_and_the_control():
    from protolab.plan.load import load_builtin

    quick, _ = load_builtin("failover", "quick")
    full, _ = load_builtin("failover", "full")
    assert [f.name for f in quick.faults] == ["link-down-5s", "server-restart", "array-stall-3s"]
    assert {c.target for c in quick.configurations} == {"lab:iscsi", "lab:nfs", "lab:nbd"}
    assert len(expand(quick)) == 3 * 4 * 3 and len(expand(full)) == 3 * 5 * 5
    down = quick.faults[0]
    assert (down.kind, down.duration, down.link_port) == ("link_down", 5.0, 0)
    # a link down's stall may last until TCP's next try, up to the outage again later (the first run's: 6.4–6.7 s
    # for 5 s): even then the recovery's steady window (5 × 0.5 s) fits before the window's end
    for plan in (quick, full):
        assert all(plan.method.duration - (f.at + 2 * f.duration + 0.2) >= 2.5 for f in plan.faults)
    # ≤ 10 min at quick: every window's warm-up and length, plus ≤ 0.5 s each (the first run's cost)
    m = quick.method
    assert len(expand(quick)) * (m.warmup + m.duration + 0.5) <= 9.5 * 60
    assert max(f.duration for f in full.faults) == 30.0 and full.method.repeats == 5


def test_validate_s_matrix_line_counts_the_fault_values():
    from protolab.plan.matrix_line import matrix_line

    plan = _plan(DOWN)
    assert matrix_line(plan, len(expand(plan))).startswith(
        "2 configurations × 1 workloads × 1 load points × 2 repeats × 2 fault values (none and 1 fault) = 8 cells")


def test_the_plan_references_example_is_valid():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "plan.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", doc, re.S) if b.startswith("[[faults]]"))
    plan = _plan(block.replace('at = "5s"', 'at = "2s"').replace('duration = "5s"', 'duration = "3s"'))
    assert plan.faults[0].summary() == "port0-down: link of storage port 0 down at 2s for 3s"


def test_a_link_down_runs_through_guests_their_kernels_included_with_the_initiators_timeouts():
    plan = _plan(DOWN, configs=LIO, top='[hypervisor]\nvcpus = 1')
    lio = plan.configuration("lio")
    assert lio.iscsi.effective() == {"replacement_timeout": 5, "noop_out_interval": 1, "noop_out_timeout": 1}
    assert lio.iscsi.detection_s() == (2, 3) and lio.iscsi.defaults() == []
    assert len(expand(plan)) == 2 * 2 * 3  # (none, port0-down) × repeats × configurations


@pytest.mark.parametrize("iscsi, words", [
    ('{ replacement_timeout = 0 }', "replacement_timeout 0: give whole seconds from 1 to 3600"),
    ('{ noop_out_interval = "1.5s" }', "noop_out_interval '1.5s': give whole seconds from 0 to 3600"),
    ('{ noop_out_timeout = "soon" }', "noop_out_timeout: expected a duration"),
    ('{ login_timeout = 3 }', "unknown field"),
])
def test_the_initiators_timeouts_are_refused_in_one_line(iscsi, words):
    msg = _refused(faults="", configs=LIO.split("iscsi =")[0] + f"iscsi = {iscsi}", top='[hypervisor]\nvcpus = 1')
    assert "iscsi" in msg and words in msg, msg


def test_the_initiators_timeouts_belong_to_a_guests_kernel_iscsi():
    msg = _refused(faults="", configs='[[configurations]]\nname = "t"\ntarget = "lab:iscsi"\n'
                   'iscsi = { replacement_timeout = 5 }')
    assert "configuration 't': iscsi (open-iscsi's timeouts) applies to iSCSI logged in by a guest's kernel" in msg


def test_timeouts_not_given_are_open_iscsis_defaults_and_said_so():
    from protolab.plan.initiator_timeouts import IscsiTimeouts

    t = IscsiTimeouts(replacement_timeout=5)
    assert t.effective() == {"replacement_timeout": 5, "noop_out_interval": 5, "noop_out_timeout": 5}
    assert t.words() == ("replacement_timeout 5 s, NOP-Out every 5 s, timeout 5 s (noop_out_interval, "
                         "noop_out_timeout: open-iscsi's default)")
    assert IscsiTimeouts(noop_out_interval=0).detection_s() is None


def test_a_configuration_without_timeouts_is_stored_as_before_they_existed():
    plan = _plan(DOWN, configs=LIO, top='[hypervisor]\nvcpus = 1')
    dumped = {c["name"]: c for c in plan.model_dump(mode="json")["configurations"]}
    assert "iscsi" not in dumped["nbd"] and dumped["lio"]["iscsi"] == {
        "replacement_timeout": 5, "noop_out_interval": 1, "noop_out_timeout": 1}
