"""fio job files rendered for cells."""

from __future__ import annotations

import configparser

import pytest

from protolab.engine.jobfile import bs_options, region, render_job, render_prepare, rw_options
from protolab.engine.targets import resolve
from protolab.plan.expand import expand
from protolab.plan.library import BUILTIN_WORKLOADS
from protolab.plan.load import load_plan_text
from protolab.plan.model import Workload

W = BUILTIN_WORKLOADS


def _parse(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.read_string(text)
    return cp


@pytest.mark.parametrize("name,expected", [
    ("tr3808-4k", {"rw": "randrw", "rwmixread": "75"}),
    ("vmtn-max-read", {"rw": "read"}),
    ("vmtn-max-50read", {"rw": "rw", "rwmixread": "50"}),
    ("vmtn-real-life", {"rw": "randrw", "rwmixread": "65", "percentage_random": "60"}),
    ("tr3808-init", {"rw": "randread"}),
])
def test_rw_options(name, expected):
    assert rw_options(W[name]) == expected


def test_write_only_and_block_mix():
    w = Workload(name="x", block_size={"4k": 3, "64k": 1}, read_pct=0, random_pct=100)
    assert rw_options(w) == {"rw": "randwrite"}
    assert bs_options(w) == {"bssplit": "4k/75:64k/25"}
    assert w.mean_block_size() == pytest.approx(0.75 * 4096 + 0.25 * 65536)
    assert bs_options(W["tr3808-8k"]) == {"bs": "8192"}


def test_regions_are_disjoint_aligned_and_cover_the_target():
    assert region(256 * 2**20, 4, W["tr3808-4k"]) == 64 * 2**20
    assert region(100 * 2**20 + 5, 3, W["tr3808-4k"]) == 33 * 2**20
    with pytest.raises(ValueError):
        region(4096, 2, W["tr3808-8k"])


PLAN = """
name = "j"
baseline = "a"
workloads = [{ name = "tr3808-8k", rate_iops = 500 }]
[[configurations]]
name = "a"
target = "/tmp/protolab-never-created.dat"
ioengine = "libaio"
fio = { norandommap = false, iodepth_batch_submit = 2 }
[[load_points]]
hosts = 1
streams = 3
[method]
warmup = "7s"
duration = "1m"
repeats = 1
data_size = "96M"
"""


def test_render_job_one_section_per_stream_warmup_as_ramp():
    plan = load_plan_text(PLAN)
    cell = expand(plan)[0]
    a = resolve("/tmp/protolab-never-created.dat", size=plan.method.data_size, ioengine="libaio", direct=True)
    cp = _parse(render_job(cell, a, plan.method, plan.configurations[0].fio))
    g = cp["global"]
    assert g["ramp_time"] == "7" and g["runtime"] == "60" and g["time_based"] == "1"
    assert g["iodepth"] == "4"  # the workload's OIO, since the load point gives none
    assert g["rate_iops"] == "375,125"  # 500 in all at 75 % read: fio caps each direction on its own
    assert g["norandommap"] == "0" and g["iodepth_batch_submit"] == "2"  # the configuration's fio options win
    streams = [s for s in cp.sections() if s.startswith("stream-")]
    assert streams == ["stream-0", "stream-1", "stream-2"]
    assert [int(cp[s]["offset"]) for s in streams] == [0, 32 * 2**20, 64 * 2**20]
    assert all(int(cp[s]["size"]) == 32 * 2**20 for s in streams)
    assert all(cp[s]["ioengine"] == "libaio" and cp[s]["direct"] == "1" for s in streams)
    assert all(cp[s]["filename"] == "/tmp/protolab-never-created.dat" for s in streams)


def test_layout_gives_each_host_its_streams_and_paths():
    """8 hosts × 20 streams: disjoint regions across hosts; the access function picks each stream's path."""
    from protolab.engine.jobfile import layout, render_streams

    plan = load_plan_text(PLAN.replace("hosts = 1\nstreams = 3", "hosts = 8\nstreams = 20").replace('"96M"', '"1G"'))
    cell = expand(plan)[0]
    paths = [resolve(f"nbd://198.18.0.{p}:10809", size=2**30, ioengine=None, direct=True) for p in (1, 2)]
    hosts = layout(cell, lambda h, g: paths[g % 2])
    assert [len(h) for h in hosts] == [20] * 8
    flat = [s for h in hosts for s in h]
    assert [s.index for s in flat] == list(range(160))
    assert all(a.offset + a.size <= b.offset for a, b in zip(flat, flat[1:]))
    assert flat[-1].offset + flat[-1].size <= 2**30
    cp = _parse(render_streams(cell, hosts[3], runtime=10, log_prefix="/r/series/c"))
    assert cp["global"]["write_iops_log"] == "/r/series/c" and cp["global"]["log_avg_msec"] == "1000"
    assert "ramp_time" not in cp["global"]
    assert cp["stream-60"]["uri"] == "nbd://198.18.0.1:10809" and cp["stream-61"]["uri"] == "nbd://198.18.0.2:10809"


@pytest.mark.parametrize("url,engine,key,value", [
    ("iscsi://198.18.0.1/iqn.2026-11.org.protolab:t1/1", "libiscsi", "filename",
     "iscsi\\://198.18.0.1\\:3260/iqn.2026-11.org.protolab\\:t1/1"),
    ("nbd://127.0.0.1:10809", "nbd", "uri", "nbd://127.0.0.1:10809"),
    ("nfs://198.18.0.1/pool/nfs", "nfs", "nfs_url", "nfs://198.18.0.1/pool/nfs"),
])
def test_url_targets(url, engine, key, value):
    a = resolve(url, size=2**26, ioengine=None, direct=True)
    assert a.ioengine == engine
    assert (a.filename if key == "filename" else a.options[key]) == value
    text = render_prepare(a)
    assert f"ioengine={engine}" in text and "rw=write" in text and f"size={2**26}" in text


@pytest.mark.parametrize("url,msg", [
    ("iscsi://host", "iscsi://HOST[:PORT]/IQN/LUN"),
    ("nfs://host", "nfs://HOST/EXPORT"),
    ("ftp://x/y", "unknown scheme 'ftp'"),
])
def test_bad_urls(url, msg):
    from protolab.errors import TargetError

    with pytest.raises(TargetError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        resolve(url, size=2**20, ioengine=None, direct=True)


def test_a_targets_description_reads_its_url_as_people_write_it():
    a = resolve("iscsi://198.18.0.1/iqn.2026-11.org.protolab:t1/1", size=2**20, ioengine=None, direct=True)
    assert a.filename == "iscsi\\://198.18.0.1\\:3260/iqn.2026-11.org.protolab\\:t1/1"  # fio's, in the job file
    assert a.describe() == "iscsi via libiscsi: iscsi://198.18.0.1:3260/iqn.2026-11.org.protolab:t1/1"
