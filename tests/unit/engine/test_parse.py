"""The json+ parser, on captured real fio 3.33 output (tests/data)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import DATA
from protolab.analysis.latency import merge_bins, percentile, percentiles
from protolab.engine.fio import parse_eta_iops
from protolab.engine.parse import job_entries, load_json, parse_fio_json

LOCAL = DATA / "fio-local-2streams-randrw.json"
CLIENT = DATA / "fio-client-2servers-randread.json"


def _doc(path):
    return load_json(path.read_text())


def test_p99_of_two_jobs_equals_p99_of_their_summed_bins():
    doc = _doc(LOCAL)
    jobs = doc["jobs"]
    assert len(jobs) == 2
    # Sum the two jobs' read and write clat bins by hand, straight from the JSON.
    summed: dict[int, int] = {}
    for j in jobs:
        for d in ("read", "write"):
            for k, v in j[d]["clat_ns"]["bins"].items():
                summed[int(k)] = summed.get(int(k), 0) + v
    n = sum(summed.values())
    running, p99 = 0, None
    for value in sorted(summed):
        running += summed[value]
        if running >= 0.99 * n:
            p99 = value
            break
    r = parse_fio_json(doc)
    assert r.percentiles_us["p99"] == pytest.approx(p99 / 1000.0)
    # and it is not what averaging the jobs' own p99s would give
    avg = sum(j["read"]["clat_ns"]["percentile"]["99.000000"] for j in jobs) / 2 / 1000.0
    assert r.read.percentiles_us["p99"] != pytest.approx(avg)


def test_percentile_rule_reproduces_fio_for_every_job_and_direction():
    for path in (LOCAL, CLIENT):
        for j in job_entries(_doc(path)):
            for d in ("read", "write"):
                c = j[d]["clat_ns"]
                if not c.get("N"):
                    continue
                bins = {int(k): v for k, v in c["bins"].items()}
                for p, fio_value in c["percentile"].items():
                    assert percentile(bins, float(p)) == fio_value, (path.name, d, p)


def test_local_totals_are_sums_of_jobs():
    doc = _doc(LOCAL)
    r = parse_fio_json(doc)
    jobs = doc["jobs"]
    assert r.jobs == 2 and r.errors == 0
    # as fio's group reporting: all jobs' I/Os over the longest job's runtime (2001 ms here)
    longest = max(j["read"]["runtime"] for j in jobs) / 1000
    assert longest == 2.001
    assert r.read.iops == pytest.approx(sum(j["read"]["total_ios"] for j in jobs) / longest)
    assert r.write.iops == pytest.approx(sum(j["write"]["total_ios"] for j in jobs) / 2.001)
    assert r.iops == pytest.approx(r.read.iops + r.write.iops)
    assert r.iops == pytest.approx(sum(j[d]["iops"] for j in jobs for d in ("read", "write")), rel=1e-3)
    assert r.mbps == pytest.approx(sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write")) / longest / 1e6)
    assert r.read.ios == sum(j["read"]["total_ios"] for j in jobs)
    # merged mean = each job's clat mean weighted by its samples
    n = sum(j["read"]["clat_ns"]["N"] for j in jobs)
    mean = sum(j["read"]["clat_ns"]["mean"] * j["read"]["clat_ns"]["N"] for j in jobs) / n / 1000
    assert r.read.lat_mean_us == pytest.approx(mean)
    assert r.runtime_s == 2.0
    assert r.per_host_iops == {"local": pytest.approx(r.iops)}


def test_client_server_output_skips_all_clients_and_splits_hosts():
    text = CLIENT.read_text()
    assert text.startswith("<")  # fio's '<host> …' lines precede the JSON
    r = parse_fio_json(text)
    doc = load_json(text)
    allc = next(j for j in doc["client_stats"] if j["jobname"] == "All clients")
    assert r.jobs == 4
    assert r.iops == pytest.approx(allc["read"]["iops"], rel=1e-6)
    assert set(r.per_host_iops) == {"127.0.0.1:18765", "127.0.0.1:18766"}
    assert sum(r.per_host_iops.values()) == pytest.approx(r.iops)
    assert r.write.ios == 0 and r.write.lat_mean_us is None


def test_job_errors_are_counted_with_messages():
    doc = json.loads(json.dumps(_doc(LOCAL)))
    doc["jobs"][1]["error"] = 5
    r = parse_fio_json(doc)
    assert r.errors == 1
    assert r.error_messages == ["stream-1: error 5 (Input/output error)"]


def test_garbage_is_a_tool_error():
    from protolab.errors import ToolError

    with pytest.raises(ToolError, match="no JSON found"):
        parse_fio_json("fio: engine not found\n")
    with pytest.raises(ToolError, match="incomplete"):
        parse_fio_json('{"jobs": [')


@given(st.lists(st.dictionaries(st.integers(1, 10**9), st.integers(0, 1000), max_size=30), min_size=1, max_size=5),
       st.floats(0.1, 100))
def test_merged_percentile_lies_within_the_jobs_percentiles(hists, p):
    merged = merge_bins(hists)
    if not merged:
        assert percentile(merged, p) is None
        return
    own = [percentile(h, p) for h in hists if sum(h.values())]
    assert min(own) <= percentile(merged, p) <= max(own)


def test_percentiles_keys():
    assert list(percentiles({100: 1})) == ["p50", "p90", "p95", "p99", "p99.9"]


@pytest.mark.parametrize("line,iops", [
    ("Jobs: 2 (f=2): [m(2)][-.-%][r=134MiB/s,w=44.6MiB/s][r=34.2k,w=11.4k IOPS][eta 00m:00s]", 45600),
    ("Jobs: 1 (f=1): [r(1)][50.0%][r=118MiB/s][r=15.1k IOPS][eta 00m:02s]", 15100),
    ("Jobs: 1 (f=1): [W(1)][20%][w=1024KiB/s][w=256 IOPS][eta 00m:04s]", 256),
    ("Jobs: 1 (f=1): [R(1)][100.0%][r=3.2GiB/s][r=1.2M IOPS][eta 00m:00s]", 1.2e6),
    ("stream-0: (groupid=0, jobs=1): err= 0", None),
])
def test_live_iops_from_fio_status_lines(line, iops):
    assert parse_eta_iops(line) == (None if iops is None else pytest.approx(iops))
