"""The report's two drawing workers: forked processes that draw charts (report.figures.draw) while the report's
process reads the run and writes its tables; a thread writes each worker's pipe and one reads it, so neither side
waits on the other's pipe.

The report's process forks the first worker, which imports matplotlib and draws one chart (loading its fonts)
while the report's process reads the run, then forks the second from itself: neither pays that ~0.6 s twice,
and the report's process has a core to itself meanwhile."""

from __future__ import annotations

import dataclasses
import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .figures import Drawn, _draw_args

if TYPE_CHECKING:
    from .chart import Chart


def _warm() -> None:
    """A worker's start: import matplotlib and draw a chart to SVG and PNG (its fonts, its text layout), while the
    report's process is still reading the run."""
    import io

    from matplotlib import rc_context

    from .chart import Chart, Series
    from .figures import _RC, figure

    chart = Chart(id="warm", kind="relative", section="", workload="", title="1×4×4=16", note="a = 100", ylabel="%",
                  x=["1×1×1=1", "1×4×4=16"], series=[Series("a", [100.0, 90.0], [95.0, 80.0], [105.0, 99.0])],
                  table=[])
    with rc_context(_RC):
        fig = figure(chart, ["a"])
        for fmt in ("svg", "png"):
            fig.savefig(io.BytesIO(), format=fmt)


#: The signals that stop a run (run.signals.Stopper); held while the drawing workers are forked.
STOP_SIGNALS = {2, 15, 1}  # SIGINT, SIGTERM, SIGHUP


@contextmanager
def held_stops():
    """The stop signals wait while this process forks; yields the signal mask to restore in the child.

    A signal must not reach the run's handler inside os.fork's at-fork callbacks, where Python ignores the
    handler's KeyboardInterrupt (printing its traceback). Blocking it in this thread is not enough when the
    process has other threads (a pytest-xdist worker's; a run's readers): the kernel hands it to one of them and
    Python runs the handler here all the same. So on the main thread each Python handler is also swapped for
    one that only notes the signal, and a noted signal is raised again once the fork is done. The mask stays:
    the child starts with the signals blocked and sets its own handlers."""
    import signal
    import threading

    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    noted: list[int] = []
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            if callable(handler):  # a Python handler (the run's Stopper, Python's own for SIGINT)
                before[sig] = handler
                signal.signal(sig, lambda signum, frame: noted.append(signum))
    try:
        yield held
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a signal blocked meanwhile is handled here
        for sig in dict.fromkeys(noted):
            signal.raise_signal(sig)


class Drawer:
    """Two worker processes for drawing, forked before the report's data is read (so they are small and
    need not import protolab again); `start` hands them the charts. The first is this process's child, and forks
    the second once it has imported matplotlib and drawn a chart (see the module's text). The threads that write
    and read the workers' pipes start with the first batch.

    Each worker is one forked process with one pipe, and nothing replaces a worker that ends:
    multiprocessing.Pool's worker handler re-forked workers from its thread while `terminate` ran,
    and such a late child, forked while other threads held locks, hung on a lock for ever after its
    parent had gone (seen in CI). A worker ends when its pipe closes, so no worker outlives this process;
    the first waits for the second before it ends, and the second is killed if the first dies.
    """

    def __init__(self) -> None:
        self.workers: list[tuple[Any, Any]] = []  # (the first's process, or None for the second; this end of its pipe)
        self.inboxes: list[Any] = []  # per worker, its replies as they come (a thread reads each pipe)
        self.outboxes: list[tuple[Any, Any]] = []  # per worker, (queue, thread) of what goes to it (a thread writes)
        self.gone: list[bool] = []  # per worker, whether its pipe has closed (its later batches are drawn here)
        if (os.cpu_count() or 1) > 1:
            import multiprocessing as mp

            ctx = mp.get_context("fork")
            pipes = []
            try:
                with held_stops() as held:  # a signal waits until the first worker exists; handled on leaving
                    try:
                        for _ in range(2):
                            pipes.append(ctx.Pipe())
                        ours, theirs = [o for o, _ in pipes], [t for _, t in pipes]
                        p = ctx.Process(target=_first, args=(theirs, ours, held), daemon=True, name="protolab-draw")
                        p.start()
                        self.workers = [(p, ours[0]), (None, ours[1])]
                    finally:
                        for _, theirs_end in pipes:
                            theirs_end.close()
            except (OSError, ValueError):  # no processes (or no fork) to be had here: draw in this process
                for ours_end, _ in pipes:
                    ours_end.close()
                self.close()
            except BaseException:
                self.close()
                raise

    def pids(self, timeout: float = 10.0) -> list[int]:
        """The workers' process ids (the second's once the first has forked it, waiting up to ``timeout``)."""
        import time

        if not self.workers:
            return []
        first = self.workers[0][0].pid
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(f"/proc/{first}/task/{first}/children") as f:
                    second = [int(x) for x in f.read().split()]
            except OSError:
                second = []
            if second or time.monotonic() > deadline:
                return [first, *second]
            time.sleep(0.02)

    def start(self, charts: list[Chart], folder: Path | None, configurations: list[str] | None = None,
              png: bool = True) -> Any:
        """Start drawing every chart; returns a function that waits and gives {id: Drawn}. Batches are waited for
        in the order they were started (each worker answers its batches in turn)."""
        jobs = [(c, folder, configurations, png) for c in charts]
        if self.workers:  # a chart's table is not drawn: the workers need not read it
            jobs = [(dataclasses.replace(c, table=[]), *rest) for c, *rest in jobs]
        if len(self.workers) < 2:
            done = {d.id: d for d in map(_draw_args, jobs)}
            return lambda: done
        parts = [jobs[0::2], jobs[1::2]]  # a worker with nothing to draw is sent nothing
        if not self.outboxes:  # the threads with the first batch: until then this process may fork (report.cellscsv)
            self.inboxes = [_inbox(ours) for _, ours in self.workers]
            self.outboxes = [_outbox(ours) for _, ours in self.workers]
            self.gone = [False] * len(self.workers)
        for (outbox, _), part in zip(self.outboxes, parts):
            if part:
                outbox.put(part)

        def wait() -> dict[str, Drawn]:
            out: dict[str, Drawn] = {}
            for i, (inbox, part) in enumerate(zip(self.inboxes, parts)):
                if not part:
                    continue
                got = None if self.gone[i] else inbox.get()
                if got is None:  # the worker died (its pipe says so once): its charts are drawn here
                    self.gone[i] = True
                    got = [_draw_args(j) for j in part]
                if isinstance(got, str):
                    from ..errors import ToolError

                    raise ToolError(f"drawing the report's charts failed: {got}")
                out.update({d.id: d for d in got})
            return out

        return wait

    def close(self) -> None:
        """Stop the workers (also when drawing failed)."""
        for outbox, _ in self.outboxes:
            outbox.put(None)  # after what is queued: the worker ends when it reads it
        if not self.outboxes:  # nothing was sent: the pipe's end is the worker's end
            for _, conn in self.workers:
                conn.close()
        for i, (p, conn) in enumerate(self.workers):
            if p is not None:  # the first: it ends after the second (which dies with it)
                p.join(timeout=2)
                if p.is_alive():
                    p.kill()  # a writer still blocked on its pipe then fails, and ends
                    p.join()
            if self.outboxes:
                self.outboxes[i][1].join(timeout=2)
            conn.close()
        self.workers, self.inboxes, self.outboxes, self.gone = [], [], [], []


def _inbox(conn) -> Any:
    """A queue of the worker's replies, read from its pipe by a thread (None once the pipe closes): a worker
    sending one batch's drawings never blocks this process sending it the next batch."""
    import queue
    import threading

    replies: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                replies.put(conn.recv())
            except (EOFError, OSError):
                replies.put(None)
                return

    threading.Thread(target=read, daemon=True, name="protolab-draw-inbox").start()
    return replies


def _outbox(conn) -> tuple[Any, Any]:
    """A queue of what goes to a worker, written to its pipe by a thread, and the thread: a batch larger than the
    pipe holds waits there until the worker has drawn its first batch, and this process goes on meanwhile (it
    waited ~0.9 s on the pipe in a 10,000-window report). None is the last item: it is sent, and the thread ends;
    so does a pipe that breaks (the worker is gone: `wait` draws its charts here, from its inbox's None)."""
    import queue
    import threading

    items: queue.SimpleQueue = queue.SimpleQueue()

    def write() -> None:
        while True:
            item = items.get()
            try:
                conn.send(item)
            except (OSError, ValueError):
                return
            if item is None:
                return

    writer = threading.Thread(target=write, daemon=True, name="protolab-draw-outbox")
    writer.start()
    return items, writer


def _first(conns, parents_ends, mask) -> None:
    """The first worker: warm up, fork the second from itself, draw; on its way out it waits for the second."""
    import signal

    for end in parents_ends:
        end.close()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the run's handlers: the parent stops us
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the parent decides
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        _warm()
    except Exception:  # noqa: BLE001 — no worker, no traceback: the report's process draws, and says what fails
        return
    second = _fork_second(conns)
    conns[1].close()  # the second's pipe is its own: its end closes with it
    try:
        _serve(conns[0])
    finally:
        conns[0].close()
        if second:
            os.waitpid(second, 0)


def _fork_second(conns) -> int:
    """Fork the second worker (warm, like this one); its pid, or 0 when none could be forked (the report's process
    then reads the end of its pipe and draws its charts itself)."""
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return 0
    if pid:
        return pid
    try:  # the second worker: it never returns into the first's code
        conns[0].close()
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: it dies with the first
        if os.getppid() == parent:  # else the first died before the line above
            _serve(conns[1])
    finally:
        os._exit(0)


def _serve(conn) -> None:
    """A drawing worker's loop: lists of charts in, lists of Drawn (or an error's one line) out, until the pipe
    closes or None comes."""
    while True:
        try:
            jobs = conn.recv()
        except (EOFError, OSError):
            return
        if jobs is None:
            return
        try:
            conn.send([_draw_args(j) for j in jobs])
        except Exception as e:  # noqa: BLE001 — the parent raises it, in one line
            try:
                conn.send(f"{type(e).__name__}: {e}")
            except (OSError, ValueError):
                return


def draw_all(charts: list[Chart], folder: Path | None, configurations: list[str] | None = None,
             png: bool = True) -> dict[str, Drawn]:
    """Every chart, by id (two workers when there are many)."""
    if len(charts) < 6:
        return {d.id: d for d in map(_draw_args, [(c, folder, configurations, png) for c in charts])}
    drawer = Drawer()
    try:
        return drawer.start(charts, folder, configurations, png)()
    finally:
        drawer.close()


def save_all(charts: list[Chart], folder: Path, configurations: list[str] | None = None) -> list[Path]:
    """Every chart as PNG and SVG under `folder`."""
    return [p for d in draw_all(charts, folder, configurations).values() for p in d.paths]
