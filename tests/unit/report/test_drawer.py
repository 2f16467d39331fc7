"""The report's two drawing workers: charts drawn there equal charts drawn here, and no worker outlives its use."""

from __future__ import annotations

import os
import signal
import time

from protolab.report.drawer import Drawer
from protolab.report.figures import draw
from protolab.report.tables import Chart, Series


def _charts(n: int) -> list[Chart]:
    return [Chart(id=f"c{i}", kind="relative", section="s", workload="w", title=f"chart {i}", note="a = 100",
                  ylabel="% of a", x=["1×1", "1×4"], series=[Series("a", [100.0, 100.0]), Series("b", [50.0 + i, 80.0])],
                  table=[]) for i in range(n)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone too
        return open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_draw_what_this_process_draws_and_end_on_close():
    charts = _charts(5)
    drawer = Drawer()
    pids = drawer.pids()
    assert len(pids) == (2 if (os.cpu_count() or 1) > 1 else 0)
    try:
        got = drawer.start(charts, None, ["a", "b"], png=False)()
    finally:
        drawer.close()
    assert sorted(got) == [c.id for c in charts]
    for c in charts:
        assert got[c.id].svg == draw(c, None, ["a", "b"], False).svg
    assert not drawer.workers and not any(_alive(p) for p in pids)


def test_a_worker_that_dies_has_its_charts_drawn_here_and_none_is_left():
    drawer = Drawer()
    if len(drawer.workers) < 2:
        drawer.close()
        return
    dead, _ = drawer.workers[0]
    second = drawer.pids()[1]
    os.kill(dead.pid, signal.SIGKILL)  # the first: the second dies with it
    dead.join(5)
    deadline = time.monotonic() + 10
    while _alive(second) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(second)
    charts = _charts(7)
    try:  # three batches, waited in turn: a dead worker's pipe says so once, and every batch is drawn here
        waits = [drawer.start(charts[:1], None, ["a", "b"], png=False), drawer.start(charts[1:4], None, ["a", "b"],
                                                                                       png=False),
                 drawer.start(charts[4:], None, ["a", "b"], png=False)]
        got: dict = {}
        import threading

        waiting = threading.Thread(target=lambda: got.update({k: v for w in waits for k, v in w().items()}),
                                   daemon=True)
        waiting.start()
        waiting.join(60)
        assert not waiting.is_alive()  # it waited for a reply that a dead worker's pipe gives only once
    finally:
        drawer.close()
    assert sorted(got) == [c.id for c in charts]


def test_workers_end_when_their_parent_is_gone():
    r, w = os.pipe()
    child = os.fork()
    if child == 0:  # a report process that dies without closing its drawer
        os.close(r)
        d = Drawer()
        os.write(w, (",".join(str(p) for p in d.pids()) + "\n").encode())
        os._exit(0)
    os.close(w)
    line = os.read(r, 100).decode().strip()
    os.close(r)
    os.waitpid(child, 0)
    pids = [int(x) for x in line.split(",") if x]
    assert len(pids) == (2 if (os.cpu_count() or 1) > 1 else 0)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), pids


def test_a_signal_while_the_workers_are_forked_is_handled_after_the_fork_and_no_worker_is_left():
    """A SIGTERM landing in os.fork's at-fork callbacks was ignored by Python (its traceback printed, the run went
    on); it is held while the workers are forked, then raised where the run can handle it."""
    from protolab.run.signals import Stopper

    if (os.cpu_count() or 1) < 2:
        return  # one core: no workers are forked
    armed = [True]  # at-fork callbacks cannot be unregistered: this one acts once
    os.register_at_fork(after_in_parent=lambda: armed and armed.pop() and os.kill(os.getpid(), signal.SIGTERM))
    stop = Stopper()
    with stop.installed():
        import pytest

        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            Drawer()
    assert not armed
    import multiprocessing as mp

    deadline = time.monotonic() + 10
    while mp.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not mp.active_children()


def test_handing_a_busy_worker_more_than_its_pipe_holds_does_not_stop_this_process():
    """The report's process hands over the second batch while the workers draw the first: the batch waits in a
    thread, not in this process's write (it waited ~0.9 s there in a 10,000-window report)."""
    import threading

    drawer = Drawer()
    if len(drawer.workers) < 2:
        drawer.close()
        return
    rows = [{"window": t, "label": f"{t:08d}" * 8} for t in range(40000)]  # the numbers beside it: not drawn
    big = [Chart(id=f"big{i}", kind="relative", section="s", workload="w", title=f"big {i}", note="", ylabel="% of a",
                 x=["1×1", "1×4"], series=[Series("a", [100.0, 100.0])], table=rows) for i in range(4)]
    import pickle

    assert len(pickle.dumps(big[0::2])) > 2**21  # more than the pipe (a socket pair) holds: a plain send blocks
    pids = drawer.pids()
    assert len(pids) == 2
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)  # the workers busy: they read nothing
    try:
        handed = threading.Thread(target=lambda: waits.append(drawer.start(big, None, ["a"], png=False)), daemon=True)
        waits: list = []
        handed.start()
        handed.join(30)
        assert not handed.is_alive() and waits  # start() returned with the workers reading nothing
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    try:
        got = waits[0]()
    finally:
        drawer.close()
    assert sorted(got) == [c.id for c in big] and all(got[c.id].svg.startswith("<?xml") for c in big)


def test_a_batch_of_one_chart_is_drawn_by_a_worker_and_batches_are_answered_in_turn(monkeypatch):
    """The report hands over its charts in batches as they are made; one chart still goes to a worker (this
    process never imports matplotlib for it)."""
    import protolab.report.drawer as drawer_module

    drawer = Drawer()
    if len(drawer.workers) < 2:
        drawer.close()
        return

    def here(_job):
        raise AssertionError("drawn in the report's process")

    monkeypatch.setattr(drawer_module, "_draw_args", here)  # the workers were forked with the real one
    charts = _charts(6)
    try:
        waits = [drawer.start(charts[:1], None, ["a", "b"], png=False),
                 drawer.start(charts[1:2], None, ["a", "b"], png=False),
                 drawer.start(charts[2:], None, ["a", "b"], png=False)]
        got = [w() for w in waits]
    finally:
        drawer.close()
    assert [sorted(g) for g in got] == [["c0"], ["c1"], ["c2", "c3", "c4", "c5"]]
    assert all(g[c].svg.startswith("<?xml") for g in got for c in g)


def test_a_worker_that_cannot_warm_up_leaves_its_charts_here_without_a_traceback(monkeypatch, capfd):
    import protolab.report.drawer as drawer_module

    def broken():
        raise ImportError("no matplotlib here")

    monkeypatch.setattr(drawer_module, "_warm", broken)  # the forked worker runs this one
    drawer = Drawer()
    try:
        got = drawer.start(_charts(3), None, ["a", "b"], png=False)()
    finally:
        drawer.close()
    assert sorted(got) == ["c0", "c1", "c2"]
    assert "Traceback" not in capfd.readouterr().err
