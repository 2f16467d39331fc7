"""Per-thread CPU of the storage servers, softirq per core and fio's busiest job: what a bottleneck is named from."""

import json
from pathlib import Path

import pytest

from conftest import DATA
from protolab.engine.parse import parse_fio_json
from protolab.proc import Completed, FakeRunner
from protolab.telemetry import cpu as tcpu
from protolab.telemetry.telemetry_window import Window


def _stat(pid: int, comm: str, utime: int, stime: int) -> str:
    # stat(5): pid (comm) state ppid … field 14 utime, 15 stime
    return f"{pid} ({comm}) S 1 " + " ".join(["0"] * 9) + f" {utime} {stime} 0 0 20 0 1 0\n"


def fake_proc(root: Path, procs: dict[int, dict[int, tuple[str, int, int]]],
              children: dict[int, list[int]] | None = None, softirq: tuple[int, ...] = (5, 7)) -> Path:
    """A /proc of processes (pid → tid → comm, utime, stime ticks), with children, and a /proc/stat."""
    for pid, threads in procs.items():
        for tid, (comm, u, s) in threads.items():
            task = root / str(pid) / "task" / str(tid)
            task.mkdir(parents=True)
            (task / "comm").write_text(comm + "\n")
            (task / "stat").write_text(_stat(tid, comm, u, s))
            kids = (children or {}).get(pid, []) if tid == pid else []
            (task / "children").write_text(" ".join(map(str, kids)))
    lines = ["cpu  1 2 3 4 5 6 7 0 0 0"] + [f"cpu{i} 1 0 1 10 0 0 {n} 0 0 0" for i, n in enumerate(softirq)]
    (root / "stat").write_text("\n".join(lines) + "\n")
    return root


def test_threads_of_a_process_and_its_children_by_name(tmp_path):
    proc = fake_proc(tmp_path, {100: {100: ("tgtd", 300, 100), 101: ("tgtd", 5, 5)}, 200: {200: ("helper", 10, 0)}},
                     children={100: [200]})
    got = tcpu.thread_cpu_seconds(100, proc)
    assert got == {"tgtd#100": pytest.approx(400 / tcpu.TICK), "tgtd#101": pytest.approx(10 / tcpu.TICK),
                   "helper#200": pytest.approx(10 / tcpu.TICK)}
    assert tcpu.thread_cpu_seconds(999, proc) == {}


def test_a_threads_name_is_read_from_its_stat_whatever_it_holds(tmp_path):
    """One read a thread: the name comes from stat's '(comm)', as its comm file has it (spaces and parentheses
    inside, blanks around it trimmed), and a thread that ended between listing and reading is left out."""
    proc = fake_proc(tmp_path, {100: {100: ("tgtd", 3, 1), 101: (" work (io) 1 ", 5, 5), 102: ("gone", 1, 1)}})
    (proc / "100" / "task" / "102" / "stat").unlink()
    assert tcpu.thread_cpu_seconds(100, proc) == {"tgtd#100": pytest.approx(4 / tcpu.TICK),
                                                  "work (io) 1#101": pytest.approx(10 / tcpu.TICK)}


def test_softirq_per_core_from_proc_stat(tmp_path):
    proc = fake_proc(tmp_path, {100: {100: ("x", 0, 0)}}, softirq=(5, 70))
    assert tcpu.cores_softirq_seconds(proc) == [5 / tcpu.TICK, 70 / tcpu.TICK]


def test_window_names_each_servers_busiest_thread_and_softirq_per_core(monkeypatch):
    samples = iter([({"tgtd#1": 10.0, "tgtd#2": 3.0}, [1.0, 2.0]),
                    ({"tgtd#1": 11.9, "tgtd#2": 3.4, "bs#3": 0.5}, [1.1, 2.9])])
    state = {}

    def threads(pid, proc):
        state["now"] = next(samples)
        return state["now"][0]

    monkeypatch.setattr("protolab.telemetry.cpu.thread_cpu_seconds", threads)
    monkeypatch.setattr("protolab.telemetry.cpu.cores_softirq_seconds", lambda proc: state["now"][1])
    monkeypatch.setattr("protolab.telemetry.cpu.tree_cpu_seconds", lambda pid, proc: 1.0)
    runner = FakeRunner(answers={("ip",): Completed(("ip",), 0, "[]", "")})
    w = Window.of(runner, server_pids={"tgtd": 1}, offload_ports=[])
    d = w.delta(w.sample(), w.sample())
    busiest = d["server_threads"]["tgtd"]
    assert busiest["thread"] == "tgtd" and busiest["cpu_s"] == pytest.approx(1.9) and busiest["threads"] == 3
    assert busiest["live_cpu_s"] == pytest.approx(1.9 + 0.4 + 0.5)  # a thread born in the window counts from 0
    assert d["cores_softirq_s"] == [pytest.approx(0.1), pytest.approx(0.9)]


def test_fio_busiest_job_share_of_a_core():
    doc = json.loads((DATA / "fio-local-2streams-randrw.json").read_text())
    r = parse_fio_json(doc)
    # stream-0 2.7 + 21.55 %, stream-1 3.2 + 21.15 %: the busiest is stream-1 at 24.35 % of a core
    assert r.job_cpu_share_max == pytest.approx(0.2435)
