"""One fio measurement of a cell over its hosts: direct, or one `fio --client` over every host's server.

A cell whose only host is this machine (or a lab namespace on it) runs fio directly,
which gives live IOPS; otherwise one fio client drives every host's fio server (fio's
client shows no live status while it writes JSON). Either way every job logs its
IOPS each second, and the logs become the cell's per-second series.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..conventions import digits
from ..plan.expand import Cell
from ..plan.verify import Verification
from ..safepath import inside
from ..trust import make_dir
from .agents import Agent
from .fio import Fio
from .jobfile import Stream, render_streams
from .replay import replay_files

_LOG = re.compile(r"_iops\.(\d+)\.log(?:\.(.+))?$")


@dataclass
class HostRun:
    """What one load host runs in a cell."""

    name: str
    agent: Agent | None  # None: run fio directly
    netns: str | None
    streams: list[Stream]


@dataclass
class Measurement:
    """fio's JSON text and the per-second IOPS series (total and per host)."""

    json_text: str
    series: list[float]
    series_by_host: dict[str, list[float]]
    op_errors: list[str] = field(default_factory=list)  # failed operations fio printed but did not count


def read_series(folder: Path, prefix: str) -> tuple[list[float], dict[str, list[float]]]:
    """Sum fio's per-job IOPS logs (one line per second and direction) into per-second series."""
    by_host: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    # Each job drops its own last, partial second; a second is kept only if every job logged it,
    # otherwise the sum would fall at the end for no reason but logging.
    complete: int | None = None
    for f in folder.glob(f"{prefix}_iops.*.log*"):
        m = _LOG.search(f.name)
        if not m:
            continue
        host = m.group(2) or "local"
        seconds = 0
        for line in f.read_text().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 2 or not digits(parts[0]):
                continue
            second = max(0, round(int(parts[0]) / 1000) - 1)
            by_host[host][second] += float(parts[1])
            seconds = max(seconds, second + 1)
        complete = seconds if complete is None else min(complete, seconds)
    n = complete or 0
    hosts = {host: [per_s.get(i, 0.0) for i in range(n)] for host, per_s in by_host.items()}
    total = [sum(h[i] for h in hosts.values()) for i in range(n)]
    return total, hosts


def client_plan(hosts: list[HostRun], jobs: list[Path]) -> tuple[list[tuple[str, Path]], str | None]:
    """(fio --client arguments with their job files, the namespace the client must run in, if one)."""
    missing = [h.name for h in hosts if h.agent is None]
    if missing:
        raise ValueError(f"hosts without a fio server in a multi-host cell: {missing}")
    clients = [(h.agent.client_arg(), job) for h, job in zip(hosts, jobs)]  # type: ignore[union-attr]
    # agents reached over TCP on a namespace's loopback (guests) need the client in that namespace
    where = {getattr(h.agent, "client_netns", None) for h in hosts}
    return clients, (where.pop() if len(where) == 1 else None)


def measure(
    fio: Fio,
    cell: Cell,
    hosts: list[HostRun],
    *,
    runtime: float,
    folder: Path,
    tag: str,
    extra: dict | None = None,
    on_iops: Callable[[float], None] | None = None,
    timeout: float,
    label: str,
    socket_dir: Path | None = None,
    verify: Verification | None = None,
) -> Measurement:
    """Run ``runtime`` seconds of ``cell`` on ``hosts``; job files, logs and JSON go in ``folder`` (``verify``: its
    writes checksummed, as a window's)."""
    make_dir(folder)
    name = f"{cell.id}.{tag}"
    prefix = str(folder / name)
    output = inside(folder, f"{name}.json")
    for old in folder.glob(f"{name}_iops.*"):
        old.unlink()
    jobs = []
    for h in hosts:
        job = inside(folder, f"{name}.{h.name}.fio")
        iologs = replay_files(cell, h.streams, folder, f"{name}.{h.name}") if cell.workload.replay else None
        job.write_text(render_streams(cell, h.streams, runtime=runtime, extra=extra, log_prefix=prefix,
                                      iologs=iologs, verify=verify))
        jobs.append(job)
    if len(hosts) == 1 and hosts[0].agent is None:
        text = fio.run_job(jobs[0], output, netns=hosts[0].netns, on_iops=on_iops, timeout=timeout, label=label)
    else:
        clients, netns = client_plan(hosts, jobs)
        text = fio.run_clients(clients, output, cwd=socket_dir, timeout=timeout, label=label,
                               **({"netns": netns} if netns else {}))
    series, by_host = read_series(folder, name)
    return Measurement(text, series, by_host, list(getattr(fio, "op_errors", [])))
