"""Trace replay with the real fio: a captured iolog (and a blktrace) replayed on a local file, I/O for I/O.

tests/data/replay-small.iolog was captured by fio 3.33 itself:
  fio --name=capture --filename=/tmp/pla-fio/cap2.dat --size=16M --rw=randrw --rwmixread=67 \\
      --bssplit=4k/50:8k/40:16k/10 --ioengine=psync --number_ios=150 --rate_iops=300,150 \\
      --write_iolog=replay-small.iolog
which reported 98 reads (733,184 bytes) and 52 writes (364,544 bytes) over 0.59 s.
"""

from __future__ import annotations

import json
import struct

from conftest import DATA

TRACE = DATA / "replay-small.iolog"

PLAN = """
name = "replay"
baseline = "a"
workloads = [{{ name = "trace", replay = {replay}, oio = {oio} }}]
[[configurations]]
name = "a"
target = "{dir}"
ioengine = "{engine}"
[[load_points]]
streams = 2
[method]
warmup = "{warmup}"
duration = "20s"
repeats = 1
data_size = "16M"
"""


def _run(tmp_path, cli, replay: str, oio: int = 1, engine: str = "psync", warmup: str = "0s"):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(dir=data, replay=replay, oio=oio, engine=engine, warmup=warmup))
    results = tmp_path / f"r{len(list(tmp_path.glob('r*')))}"
    p = cli("run", plan, "--results", results, timeout=300)
    assert p.returncode == 0, p.stderr
    run = next(results.iterdir())
    [rec] = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    return rec, run, json.loads((run / "manifest.json").read_text())


def test_an_iolog_is_replayed_io_for_io_by_every_stream(tmp_path, cli):
    # a plan's warm-up does not eat the trace's start: a replay is measured whole
    rec, run, m = _run(tmp_path, cli, f'"{TRACE}"', warmup="2s")
    r, w = rec["result"]["read"], rec["result"]["write"]
    # two streams, each the whole trace: 98 reads of 733,184 bytes and 52 writes of 364,544 bytes
    assert (r["ios"], r["bytes"], w["ios"], w["bytes"]) == (2 * 98, 2 * 733_184, 2 * 52, 2 * 364_544)
    assert rec["result"]["errors"] == 0 and rec["result"]["runtime_s"] < 5  # ends with the trace, not at 20 s
    trace = m["plan"]["workloads"][0]["trace"]
    assert (trace["ios"], trace["reads"], trace["bytes"], trace["format"]) == (150, 98, 1_097_728, "iolog3")
    w0 = m["plan"]["workloads"][0]
    assert w0["block_size"] == {"4096": 70.0, "8192": 61.0, "16384": 19.0} and round(w0["read_pct"], 2) == 65.33
    # each stream's copy: its own region (stream 1 from 8 MiB), the target's file, the trace's order
    logs = sorted((run / "raw").glob("*.measure.*.stream-*.iolog"))
    assert len(logs) == 2
    for i, log in enumerate(logs):
        ios = [ln.split() for ln in log.read_text().splitlines()[1:] if ln.split()[2] in ("read", "write")]
        assert len(ios) == 150 and all(ln[1] == str(tmp_path / "data" / "protolab.dat") for ln in ios)
        assert all(i * 8 << 20 <= int(ln[3]) and int(ln[3]) + int(ln[4]) <= (i + 1) * 8 << 20 for ln in ios)
    assert "fio version 3 iolog" in TRACE.read_text().splitlines()[0]  # the plan's file is read, never written


def test_time_scale_stretches_the_replay(tmp_path, cli):
    # 2.4 s of trace with a 1 s warm-up planned: the replay is measured whole all the same (no warm-up)
    rec, _, _ = _run(tmp_path, cli, f'{{ file = "{TRACE}", time_scale = 4.0 }}', warmup="1s")
    assert rec["result"]["read"]["ios"] == 196 and rec["result"]["write"]["ios"] == 104
    assert rec["warmup"]["seconds"] == 0
    assert 4 * 0.59 * 0.9 < rec["result"]["runtime_s"] < 4 * 0.59 * 1.5  # 0.59 s of trace, 4 × slower
    rec, _, _ = _run(tmp_path, cli, f'{{ file = "{TRACE}", no_stall = true }}')
    assert rec["result"]["read"]["ios"] == 196 and rec["result"]["runtime_s"] < 0.5


def test_deeper_queues_replay_every_io(tmp_path, cli):
    """At OIO 4 (io_uring) every I/O is replayed; fio 3.33 then counts their bytes wrongly (see README)."""
    rec, _, _ = _run(tmp_path, cli, f'"{TRACE}"', oio=4, engine="io_uring")
    assert rec["result"]["read"]["ios"] == 196 and rec["result"]["write"]["ios"] == 104


def _blk(t_ns: int, sector: int, nbytes: int, action: int) -> bytes:
    return struct.pack("<IIQQIIIIIHH", 0x65617407, 0, t_ns, sector, nbytes, action, 1, 0x800010, 0, 0, 0)


def test_a_blktrace_is_replayed_from_its_queue_events(tmp_path, cli):
    queue, complete, read, write, notify = 1, 8, 1 << 16, 2 << 16, 1 << 26
    events = []
    for i in range(40):
        op = write if i % 4 == 0 else read
        events += [_blk(i * 2_000_000, 8 * i * 3, 4096 * (1 + i % 2), queue | op),  # queued: replayed
                   _blk(i * 2_000_000 + 500, 8 * i * 3, 4096 * (1 + i % 2), complete | op)]  # completion: not
    events.append(_blk(0, 0, 0, notify | 0x17))  # a note: not an I/O
    trace = tmp_path / "small.blktrace"
    trace.write_bytes(b"".join(events))
    rec, _, m = _run(tmp_path, cli, f'"{trace}"')
    r, w = rec["result"]["read"], rec["result"]["write"]
    reads = [i for i in range(40) if i % 4]
    writes = [i for i in range(40) if i % 4 == 0]
    assert (r["ios"], w["ios"]) == (2 * 30, 2 * 10)
    assert r["bytes"] == 2 * sum(4096 * (1 + i % 2) for i in reads)
    assert w["bytes"] == 2 * sum(4096 * (1 + i % 2) for i in writes)
    assert m["plan"]["workloads"][0]["trace"]["format"] == "blktrace"
    assert 0.07 < rec["result"]["runtime_s"] < 1.0  # 39 gaps of 2 ms
