#!/usr/bin/env python3
"""Per-cell overhead of `protolab run`: each cell's wall time beyond its fio warm-up and measured window.

    PYTHONPATH=src .venv/bin/python benchmarks/cell_overhead.py [--cells 8] [--seconds 1]
    PYTHONPATH=src .venv/bin/python benchmarks/cell_overhead.py --lab-hosts 8 [--streams 20] [--cells 4] \
        [--warmup 2] [--seconds 3]     # as root: the embedded lab, NBD and iSCSI cells in turn

Runs a plan of ``--cells`` cells (psync on a scratch file, warm-up 1 s + window ``--seconds``) and prints the
median per-cell overhead: from one record to the next (each stamped as it is made, once its fio has exited), less
the later cell's warm-up and window in its jobs' own I/O time (the record's ``warmup.seconds`` and its last
measured interval's end in series.csv: both counted in the I/O time of the job that started last). What is left
is what protolab and fio add to that one cell: the lab's settings, job files, fio's start, the jobs' connections
(iSCSI logins) and start spread, the window's end status, fio's stop and exit, the parse and the record. Split at
the record's ``started`` (when the warm-up's end status had come from every fio): the head (up to the window) and
the tail (after it). A run's first cell (after the lab's bring-up) is left out. With ``--lab-hosts N`` the cells
run on the embedded lab: N hosts × ``--streams`` streams × 4 OIO against NBD and iSCSI (``--cells`` repeats each,
the two configurations in turn), one fio server per host and one fio client — the overhead at scale, per
configuration.

The floor, at scale: after each protolab run, the same lab (same plan, same prefix) is brought up again and plain
fio runs the very job files protolab wrote for each cell (``raw/<cell>.measure.<host>.fio``): one ``fio --server``
per host namespace, one ``fio --client`` over all of them, wall time minus the jobs' ``runtime`` — what fio itself
needs to connect, hand out 160 jobs, start them, gather their results and exit. ``--rounds`` alternates protolab
runs and floor runs (the machine is shared and noisy: the two share its phases), and the ratio of the medians is
protolab's overhead over fio's own. The median is what the README quotes. With ``--statuses`` each floor cell also
runs with the per-second statuses protolab's window reads (json+, ``--status-interval=1`` per server, each status
printed as it comes: fio patch 0004), the two in turn: what those statuses cost fio itself, whoever reads them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

PLAN = """name = "overhead"
baseline = "psync"
workloads = ["tr3808-4k"]
[targets.scratch]
url = "{dir}"
[[configurations]]
name = "psync"
target = "scratch"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "{warmup}s"
duration = "{seconds}s"
repeats = {cells}
data_size = "16M"
"""


LAB_PLAN = """name = "overhead-lab"
baseline = "nbd"
workloads = ["tr3808-4k"]
[lab]
prefix = "ovh{hosts}"
hosts = {hosts}
[lab.link]
rate = "10GbE"
[[configurations]]
name = "nbd"
target = "lab:nbd"
[[configurations]]
name = "iscsi"
target = "lab:iscsi"
[[load_points]]
hosts = {hosts}
streams = {streams}
oio = 4
[method]
warmup = "{warmup}s"
duration = "{seconds}s"
repeats = {cells}
"""


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _runtime(job: Path) -> float:
    """The ``runtime=`` of a job file, in seconds (protolab writes it as '<n>s' or a bare number)."""
    m = re.search(r"^runtime=([0-9.]+)(ms|s)?$", job.read_text(), re.M)
    if m is None:
        sys.exit(f"{job}: no runtime= line")
    return float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)


#: fio's options for the statuses protolab's window reads (engine.fio: Fio.run_clients with on_status)
STATUS_ARGS = ["--output-format=json+", "--eta=always", "--eta-newline=1"]


def floor(plan: Path, run: Path, work: Path, statuses: bool = False) -> dict[str, list[float]]:
    """Plain fio over each cell's own job files on a fresh lab of the same plan: {configuration: [wall − runtime]};
    with ``statuses`` also fio with the per-second statuses protolab asks for ({configuration + '+statuses': …}),
    the two in turn cell by cell."""
    from protolab.engine.fio import Fio
    from protolab.lab.lab import Lab
    from protolab.lab.lab_cli import lab_protocols
    from protolab.lab.names import default_workdir
    from protolab.plan.load import load_plan

    p = load_plan(plan)
    assert p.lab is not None
    fio = Fio.locate().path
    recs = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line.strip()]
    lab = Lab(p.lab, lab_protocols(p), default_workdir(p.lab.prefix))
    socks = work / "socks"
    socks.mkdir(mode=0o700)
    servers: list[subprocess.Popen] = []
    out: dict[str, list[float]] = {}
    lab.up()
    try:
        for h in range(p.lab.hosts):
            servers.append(subprocess.Popen(["ip", "netns", "exec", lab.names.host_ns(h), fio,
                                             f"--server=sock:{socks / f'h{h}.sock'}"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while not all((socks / f"h{h}.sock").exists() for h in range(p.lab.hosts)):
            if time.monotonic() > deadline:
                sys.exit("floor: the fio servers did not start")
            time.sleep(0.05)
        for r in sorted(recs, key=lambda r: r["seq"]):
            jobs = sorted((run / "raw").glob(f"{r['cell_id']}.measure.*.fio"))
            if len(jobs) != p.lab.hosts:
                sys.exit(f"floor: {len(jobs)} job files for cell {r['cell_id']}, expected {p.lab.hosts}")
            kinds = ["", "+statuses"] if statuses else [""]
            for kind in kinds if r["seq"] % 2 else kinds[::-1]:
                per = ["--status-interval=1"] if kind else []
                args = [a for h, job in enumerate(jobs) for a in (f"--client=sock:h{h}.sock", *per, str(job))]
                env = {**os.environ, "FIO_CLIENT_STREAM": "1"} if kind else None  # each status printed as it comes
                t0 = time.monotonic()
                done = subprocess.run([fio, *(STATUS_ARGS if kind else ["--output-format=json"]),
                                       f"--output={work / 'floor.json'}", *args], cwd=socks, capture_output=True,
                                      text=True, env=env)
                wall = time.monotonic() - t0
                if done.returncode != 0:
                    sys.exit(f"floor: fio failed for cell {r['cell_id']}: {done.stderr.strip()[-300:]}")
                out.setdefault(r["coords"]["configuration"] + kind, []).append(wall - _runtime(jobs[0]))
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            s.wait(timeout=30)
        lab.down()
        shutil.rmtree(socks, ignore_errors=True)
    return out


@dataclass(frozen=True)
class CellTime:
    """One cell's wall time beyond its warm-up and window, s, and its two parts."""

    configuration: str
    overhead: float  # from the previous record to this one, less the warm-up and the window
    head: float  # from the previous record to the window's start (the warm-up's end status), less the warm-up
    tail: float  # from the window's start to this record, less the window


def window_seconds(run: Path) -> dict[int, float]:
    """Each window's length in its jobs' I/O time, by seq: where its last merged ('all') measured interval ends
    (series.csv's t_s, on the clock of the record's warmup.seconds)."""
    out: dict[int, float] = {}
    with (run / "series.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            if row["phase"] == "measure" and row["host"] == "all":
                seq = int(row["seq"])
                out[seq] = max(out.get(seq, 0.0), float(row["t_s"]))
    return out


def cell_times(recs: list[dict], windows: dict[int, float]) -> list[CellTime]:
    """Each record after the first (in seq order): the time from the previous record's ``ended`` to its own, less its
    ``warmup.seconds`` and its window (``windows``), split at its ``started``."""
    out = []
    for prev, r in zip(recs, recs[1:]):
        a, s, e = _t(prev["ended"]), _t(r["started"]), _t(r["ended"])
        warm, window = r["warmup"]["seconds"], windows[r["seq"]]
        out.append(CellTime(r["coords"]["configuration"], e - a - warm - window, s - a - warm, e - s - window))
    return out


def protolab_gaps(plan: Path, results: Path) -> tuple[Path, float, list[dict], list[CellTime]]:
    """One `protolab run`: (its run directory, wall time, records in order, each later cell's overhead)."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", str(results)],
                       capture_output=True, text=True)
    total = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"protolab run failed: {p.stderr.strip()[-500:]}")
    run = max(results.iterdir(), key=lambda d: d.stat().st_mtime)
    lines = (run / "records.jsonl").read_text().splitlines()  # the schema-2 store
    recs = sorted((json.loads(line) for line in lines if line.strip()), key=lambda r: r["seq"])
    return run, total, recs, cell_times(recs, window_seconds(run))


def _line(what: str, values: list[float]) -> str:
    return (f"{what}: median {statistics.median(values):.3f} s  (range {min(values):.3f}–{max(values):.3f}, "
            f"{len(values)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--lab-hosts", type=int, default=0, help="run on the embedded lab with this many hosts (root)")
    ap.add_argument("--streams", type=int, default=20, help="streams per lab host (with --lab-hosts)")
    ap.add_argument("--rounds", type=int, default=2, help="protolab runs and floor runs in turn (with --lab-hosts)")
    ap.add_argument("--no-floor", action="store_true", help="skip plain fio's floor (with --lab-hosts)")
    ap.add_argument("--statuses", action="store_true",
                    help="also time fio with the per-second statuses protolab's window reads (with --lab-hosts)")
    ap.add_argument("--keep", type=Path, help="copy each protolab run's records.jsonl and series.csv into this folder")
    args = ap.parse_args()
    if args.lab_hosts and os.geteuid() != 0:
        sys.exit("--lab-hosts: the embedded lab needs root")
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "data"
        data.mkdir()
        plan = Path(d) / "p.toml"
        if not args.lab_hosts:
            plan.write_text(PLAN.format(dir=data, cells=args.cells, seconds=args.seconds, warmup=args.warmup))
            run, total, recs, cells = protolab_gaps(plan, Path(d) / "r")
            _keep(args.keep, run, "r0")
            print(f"cells {len(recs)}, warm-up {args.warmup:g} s + window {args.seconds:g} s, whole run {total:.1f} s")
            print(_line("per-cell overhead", [c.overhead for c in cells]))
            return
        plan.write_text(LAB_PLAN.format(hosts=args.lab_hosts, streams=args.streams, cells=args.cells,
                                        seconds=args.seconds, warmup=args.warmup))
        ours: dict[str, list[CellTime]] = {}
        fios: dict[str, list[float]] = {}
        for k in range(args.rounds):
            run, total, recs, cells = protolab_gaps(plan, Path(d) / f"r{k}")
            _keep(args.keep, run, f"r{k}")
            print(f"round {k + 1}: protolab, {len(recs)} cells, whole run {total:.1f} s; "
                  + _line("overhead", [c.overhead for c in cells]))
            for c in cells:
                ours.setdefault(c.configuration, []).append(c)
            if not args.no_floor:
                work = Path(d) / f"f{k}"
                work.mkdir()
                for name, v in floor(plan, run, work, args.statuses).items():
                    fios.setdefault(name, []).append(v)
                    base = name.removesuffix("+statuses")
                    what = f"fio with statuses, {base}" if base != name else f"plain fio's own, {name}"
                    print(f"round {k + 1}: " + _line(f"{what} cells", v))
        print(f"{args.lab_hosts} hosts × {args.streams} streams, warm-up {args.warmup:g} s + window "
              f"{args.seconds:g} s, {args.rounds} round(s), {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
        for name in sorted(ours):
            mine = statistics.median(c.overhead for c in ours[name])
            line = (f"  {name}: protolab's per-cell overhead {mine:.3f} s ({len(ours[name])} cells; before the "
                    f"window {statistics.median(c.head for c in ours[name]):.3f} s, after it "
                    f"{statistics.median(c.tail for c in ours[name]):.3f} s)")
            if name in fios:
                flat = [x for v in fios[name] for x in v]
                floor_s = statistics.median(flat)
                ratio = mine / floor_s if floor_s > 0 else float("inf")
                line += (f"; plain fio's own {floor_s:.3f} s ({len(flat)} runs); ratio {ratio:.2f}×, "
                         f"above the floor {mine - floor_s:+.3f} s")
            if name + "+statuses" in fios:
                flat = [x for v in fios[name + "+statuses"] for x in v]
                line += (f"; fio with protolab's statuses {statistics.median(flat):.3f} s ({len(flat)} runs), "
                         f"ratio {mine / statistics.median(flat):.2f}×")
            print(line)


def _keep(folder: Path | None, run: Path, name: str) -> None:
    """A protolab run's records and series, copied for a later look (``--keep``)."""
    if folder is not None:
        (folder / name).mkdir(parents=True, exist_ok=True)
        for f in ("records.jsonl", "series.csv"):
            shutil.copy(run / f, folder / name / f)

if __name__ == "__main__":
    main()
