"""The latency breakdown (analysis.time_breakdown, analysis.breakdown_words) on records built by hand with known
times at each level: fio's mean, the host's and the server's SRT, the device model's queue + service time."""

from __future__ import annotations

import math

import pytest

from protolab.analysis.breakdown_words import breakdown_findings, sentence
from protolab.analysis.findings import study_rows, verdicts
from protolab.analysis.time_breakdown import RESIDUAL_PCT, of_record, rows, shifts
from protolab.plan.coordinates import point_of
from protolab.results.records import (
    CellRecord,
    CellResult,
    DeviceTime,
    DirectionResult,
    ServicePoint,
    ServiceTimes,
)


def rec(config: str, repeat: int, fio: float, host: float | None = None, server: float | None = None,
        device: tuple[float, float] | None = None, *, load: int = 0, baseline: str = "direct",
        ok: bool = True) -> CellRecord:
    """A window with fio's mean ``fio`` µs; a capture when ``host`` or ``server`` is given; a device model's
    (queue, service) µs when ``device`` is."""
    d = DirectionResult(ios=1000, iops=1e6 / fio)
    res = CellResult(iops=1e6 / fio, mbps=1.0, read=d, write=DirectionResult(), lat_mean_us=fio, percentiles_us={},
                     jobs=1, runtime_s=2.0, errors=0)
    points = [ServicePoint(point=f"h/{role}", role=role, srt_us=v, pairs=500, frames=1500)
              for role, v in (("host", host), ("server", server)) if v is not None]
    st = ServiceTimes(protocol="iscsi", start_s=1.0, seconds=0.7, points=points) if points else None
    dt = DeviceTime(requests=1000, reads=1000, queue_us=device[0], service_us=device[1]) if device else None
    return CellRecord(run_id="r", seq=repeat + 10 * load, cell_id=f"w__{config}__{load}__r{repeat}",
                      coords={"workload": "w", "configuration": config, "load": load, "repeat": repeat},
                      baseline=config == baseline, hosts=1, streams_per_host=1, oio_per_stream=1 + 15 * load,
                      total_oio=1 + 15 * load, started="", ended="", result=res, status="ok" if ok else "failed",
                      raw_output="", job_file="", device_time=dt, service_times=st)


def test_a_full_breakdown_has_four_parts_that_add_up_to_fios_mean():
    b = of_record(rec("iscsi", 1, 400.0, host=330.0, server=300.0, device=(20.0, 80.0)))
    assert [(p.name, p.us) for p in b.parts] == [("initiator", 70.0), ("network", 30.0), ("server", 200.0),
                                                 ("device", 100.0)]
    assert b.residual_pct == 0.0 and b.measured


def test_the_devices_part_is_its_time_per_fio_io_where_a_page_cache_answers_half_the_ios_above_it():
    r = rec("nfs", 1, 400.0, host=330.0, server=300.0, device=(20.0, 80.0))
    r = r.model_copy(update={"device_time": r.device_time.model_copy(update={"requests": 500, "reads": 500})})
    assert [(p.name, p.us) for p in of_record(r).parts][2:] == [("server", 250.0), ("device", 50.0)]


def test_a_captured_windows_top_is_fios_mean_over_the_captured_sub_window():
    r = rec("nfs", 1, 400.0, host=430.0, server=400.0, device=(20.0, 80.0))  # the capture slowed its sub-window
    assert of_record(r).parts[0].us == -30.0  # against the window's mean: out of order
    r = r.model_copy(update={"service_times": r.service_times.model_copy(update={"lat_captured_us": 460.0})})
    b = of_record(r)
    assert [(p.name, p.us) for p in b.parts] == [("initiator", 30.0), ("network", 30.0), ("server", 300.0),
                                                 ("device", 100.0)]
    assert b.residual_pct == 0.0 and b.lat_mean_us == 460.0
    [row] = rows([r])
    assert row.lat_mean_us.mean == 400.0 and row.lat_captured_us.mean == 460.0 and row.residual_pct == 0.0
    # the device's counters over the capture's span: a page cache answered half the captured I/Os above it
    during = DeviceTime(requests=250, reads=250, queue_us=0.0, service_us=200.0)
    r = r.model_copy(update={"service_times": r.service_times.model_copy(update={"device": during,  # over 0.7 s
                                                                               "iops_captured": 500 / 0.7})})
    assert [(p.name, p.us) for p in of_record(r).parts][2:] == [("server", 300.0), ("device", 100.0)]


def test_without_a_device_model_the_server_and_the_device_are_one_part():
    b = of_record(rec("iscsi", 1, 400.0, host=330.0, server=300.0))
    assert [(p.name, p.us) for p in b.parts] == [("initiator", 70.0), ("network", 30.0), ("server + device", 300.0)]


def test_without_a_capture_the_initiator_network_and_server_are_one_part_and_a_host_point_alone_splits_it():
    b = of_record(rec("iscsi", 1, 400.0, device=(20.0, 80.0)))
    assert [(p.name, p.us) for p in b.parts] == [("initiator + network + server", 300.0), ("device", 100.0)]
    b = of_record(rec("iscsi", 1, 400.0, server=300.0, device=(20.0, 80.0)))  # no host point
    assert [(p.name, p.us) for p in b.parts] == [("initiator + network", 100.0), ("server", 200.0),
                                                 ("device", 100.0)]


def test_a_path_without_a_wire_has_no_network_and_no_server():
    b = of_record(rec("direct", 1, 150.0, device=(20.0, 80.0)), wired=False)
    assert [(p.name, p.us) for p in b.parts] == [("initiator", 50.0), ("device", 100.0)]


def test_a_capture_point_without_a_mean_folds_its_parts_and_its_note_is_kept():
    r = rec("nbd", 1, 400.0, host=330.0, server=300.0, device=(20.0, 80.0))
    points = [p.model_copy(update={"srt_us": None, "pairs": 0, "note": "tshark's dissector matched no reply"})
              for p in r.service_times.points]
    r = r.model_copy(update={"service_times": r.service_times.model_copy(update={"points": points})})
    assert [(p.name, p.us) for p in of_record(r).parts] == [("initiator + network + server", 300.0),
                                                            ("device", 100.0)]
    [row] = rows([r])
    assert row.notes == ["host (h/host): tshark's dissector matched no reply",
                         "server (h/server): tshark's dissector matched no reply"]
    assert row.not_measured == ["initiator", "network", "server"]


def test_times_out_of_order_count_as_zero_and_show_in_the_residual():
    b = of_record(rec("iscsi", 1, 400.0, host=440.0, server=300.0, device=(20.0, 80.0)))
    assert b.parts[0].us == -40.0 and b.residual_pct == pytest.approx(10.0)


def _study(capture_repeats=(3,), *, repeats: int = 3, added: float = 0.0, spread: float = 2.0):
    """direct (no wire) and iscsi over the same device model (100 µs) at 1 OIO, ``repeats`` repeats; iscsi's capture
    on ``capture_repeats``: initiator 70, network 30, server 200 (+ ``added`` in the server)."""
    out = []
    for r in range(1, repeats + 1):
        j = (r - 2) * spread  # a repeat's noise, the same shape on every level
        out.append(rec("direct", r, 150.0 + j, device=(20.0, 80.0 + j / 2)))
        cap = r in capture_repeats
        out.append(rec("iscsi", r, 400.0 + added + 2 * j, host=330.0 + added + j if cap else None,
                       server=300.0 + added + j / 2 if cap else None, device=(20.0, 80.0 + j / 3)))
    return out


def test_a_cells_parts_over_repeats_say_how_each_interval_was_formed_with_the_capture_on_one_repeat():
    found = {r.configuration: r for r in rows(_study(), {"direct": False, "iscsi": True})}
    iscsi = found["iscsi"]
    assert [p.name for p in iscsi.parts] == ["initiator", "network", "server", "device"]
    assert [p.us.n for p in iscsi.parts] == [1, 1, 1, 3] and iscsi.captured == 1
    assert [p.tested for p in iscsi.parts] == [False, False, False, True]
    assert iscsi.interval_words() == ("initiator, network and server: one repeat, no interval; device: over 3 "
                                      "repeats, 95 % t interval")
    dev = iscsi.parts[3].us
    assert dev.low < dev.mean < dev.high and dev.mean == pytest.approx(100.0)
    assert iscsi.lat_mean_us.mean == pytest.approx(400.0) and iscsi.lat_mean_us.n == 3
    # the captured repeat's parts (of its 404 µs) with the device's mean over all three repeats (100 µs, where the
    # captured one had 100.67), against the captured repeat's fio mean
    assert iscsi.residual_pct == pytest.approx(100 * (72 + 31 + (301 - 100 - 2 / 3) + 100 - 404) / 404)
    assert not iscsi.flagged and found["direct"].parts[0].name == "initiator" and found["direct"].not_measured == []


def test_one_repeat_gives_no_interval_anywhere():
    [row] = [r for r in rows(_study((1,), repeats=1)) if r.configuration == "iscsi"]
    assert all(p.us.n == 1 and not p.tested and math.isnan(p.us.low) for p in row.parts)
    assert row.interval_words() == "initiator, network, server and device: one repeat, no interval"


def test_a_residual_above_the_checks_bound_is_flagged_with_a_note():
    records = _study((3,))
    # the last repeat's capture saw the host's SRT above fio's own mean: levels out of order by 60 µs
    records = [rec("iscsi", 3, 402.0, host=462.0, server=301.0, device=(20.0, 80.0)) if
               (r.configuration, r.repeat) == ("iscsi", 3) else r for r in records]
    found = {r.configuration: r for r in rows(records, {"direct": False})}
    assert found["iscsi"].residual_pct > RESIDUAL_PCT and found["iscsi"].flagged and not found["direct"].flagged
    notes = [f for f in breakdown_findings(found.values(), {}, "direct") if f.kind == "note"]
    assert len(notes) == 1 and "iscsi: the parts of the latency breakdown add up to 1" in notes[0].text
    assert "outside the ±5 % check (the initiator part is -60.0 µs: its two times are out of order)." in notes[0].text


def _verdicts(records):
    return verdicts(study_rows(records, "direct"), "direct", ["lat_mean_us"])


def test_the_sentence_splits_the_added_time_where_every_repeat_was_captured():
    records = _study((1, 2, 3))
    found = rows(records, {"direct": False, "iscsi": True})
    vs = _verdicts(records)
    [f] = [f for f in breakdown_findings(found, vs, "direct") if f.kind == "breakdown"]
    # added 250 µs: initiator 70 − 50 = 20 (8 %), network 30 (12 %), server 200 (80 %), device 0
    assert f.text.startswith("w · 1×1×1=1: iscsi added 250 µs per I/O over direct (baseline), its average service "
                             "time called higher by the report's test: 8.0 % (")
    assert ") in the initiator, 12 % (" in f.text and ") on the network, 80 % (" in f.text
    assert ") in the server, no clear share in the device (" in f.text and f.text.endswith(").")
    assert "not tested" not in f.text and "not measured apart" not in f.text


def test_the_sentence_says_which_parts_were_not_tested_and_not_measured_apart():
    records = [r for r in _study((3,)) if True]
    records = [r.model_copy(update={"device_time": None}) if r.configuration == "iscsi" else r for r in records]
    found = {r.configuration: r for r in rows(records, {"direct": False, "iscsi": True})}
    v = _verdicts(records)[("lat_mean_us", "w", point_of(records[0]), "iscsi")]
    text = sentence(found["direct"], found["iscsi"], v)
    assert "iscsi added 250 µs per I/O over direct (baseline)" in text
    assert "where it went; not tested for the initiator, network and server + device (1 repeat on a side" in text
    assert text.endswith("server + device: not measured apart.")
    assert [s.name for s in shifts(found["direct"], found["iscsi"])] == ["initiator", "network", "server + device"]


def test_no_sentence_where_the_reports_test_did_not_call_the_difference():
    records = _study((1, 2, 3), repeats=2)  # two repeats: the report's test is not run
    found = rows(records, {"direct": False})
    assert [f for f in breakdown_findings(found, _verdicts(records), "direct") if f.kind == "breakdown"] == []


def test_a_window_with_a_fault_is_its_faults_and_not_broken_down_but_its_control_is():
    from protolab.results.faultwindow import FaultWindow

    def window(config: str, repeat: int, fault: str, kind: str | None) -> CellRecord:
        r = rec(config, repeat, 400.0, host=330.0, server=300.0, device=(20.0, 80.0))
        return r.model_copy(update={"fault": FaultWindow(fault=fault, kind=kind),
                                    "coords": {**r.coords, "fault": fault}})

    got = rows([window("iscsi", k, f, kind) for k in (1, 2) for f, kind in (("none", None), ("down", "link_down"))])
    assert len(got) == 1 and [p.name for p in got[0].parts] == ["initiator", "network", "server", "device"]
    assert got[0].point == point_of(window("iscsi", 1, "none", None))
