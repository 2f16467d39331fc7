"""The fakes and shared plans of the unit tests: the one fake fio, the fake testbed, the small local plans.

The fake fio: fio as protolab's callers see it, without running it.

Three uses: validation needs only ``version()`` and ``engines()``; a session gets every window answered with one
captured json+ document (``answer``), with failures (``fail``: cell ids) and a signal (``interrupt_at``: the n-th
run) injected; a status stream (``stream``: fio's --status-interval output) is written one document at a time and
stops where the caller says, and a client run (``run_clients``) is paced by the test's ``clock``.
"""

from __future__ import annotations

import json
from pathlib import Path

from protolab.engine.jobfile import layout
from protolab.engine.status import documents
from protolab.engine.targets import resolve
from protolab.errors import ToolError
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.run.testbed import Testbed as _Testbed

DATA = Path(__file__).resolve().parent / "data"
FIO_JSON = (DATA / "fio-local-2streams-randrw.json").read_text()
ENGINES = ["psync", "io_uring", "libaio", "libiscsi", "nfs", "nbd", "sync", "null"]


class FakeFio:
    """See the module's text."""

    path = "/fake/fio"
    cgroups = None

    def __init__(self, events: list | None = None, *, fail: set[str] = frozenset(), interrupt_at: int | None = None,
                 version: str = "fio-3.33", stream: str | None = None, answer: str = FIO_JSON,
                 engines: list[str] | None = None):
        self.events = events if events is not None else []
        self.fail, self.interrupt_at, self._version, self.answer = fail, interrupt_at, version, answer
        self.docs = documents(stream) if stream is not None else None
        self.stream = stream
        self.streamed = False  # a client run prints each server's status as it comes (fio patch 0004)
        self.burst_until = 0.0  # … and none comes before this instant (servers too busy to send them)
        self._engines = engines or ENGINES
        self.runs = 0
        self.op_errors: list[str] = []
        self.job = ""
        self.clock = None

    def version(self):
        return self._version

    def engines(self):
        return self._engines

    def run_job(self, job, output, *, netns=None, on_iops=None, timeout, label, on_status=None, status_interval_s=1,
                on_poll=None):
        self.runs += 1
        self.watches = [*getattr(self, "watches", []), getattr(on_poll, "__self__", on_poll)]
        if self.docs is not None:
            return self._stream(job, output, on_status)
        cell = Path(job).name.split(".")[0]
        if self.interrupt_at is not None and self.runs == self.interrupt_at:
            self.events.append("fio stopped")  # what the real adapter does when KeyboardInterrupt reaches it
            raise KeyboardInterrupt("SIGTERM")
        if cell in self.fail:
            self.fail = self.fail - {cell}
            raise ToolError(f"{label}: fio failed: connection reset")
        self.events.append(f"measure {cell}")
        Path(output).write_text(self.answer)
        if on_status is not None:
            on_status(json.loads(self.answer))  # its only status document, also its last
        return self.answer

    def _stream(self, job, output, on_status):
        self.job = Path(job).read_text()
        with open(output, "w") as f:
            for doc in self.docs:
                f.write(json.dumps(doc, indent=2) + "\n")
                self.events.append(("doc", max(j["job_runtime"] for j in doc["jobs"])))
                if on_status(doc):
                    self.events.append("stopped")
                    break
        return ""

    def run_clients(self, clients, output, *, cwd=None, timeout, label, status_interval, on_poll, netns=None,
                    on_status=None, statuses=None):
        """A client run of two servers: the '<host>' lines early, the document once the jobs end (``stream``),
        as fio 3.33's client prints them; with ``streamed`` set, as protolab's patched client does (each server's
        status a document of its own, as it comes), stopped when ``on_status`` says so."""
        assert status_interval and len(clients) == 2 and self.stream is not None and self.clock is not None
        if self.streamed:
            return self._client_streamed(output, on_poll, on_status, statuses)
        head, doc = self.stream[:self.stream.index("\n{") + 1], self.stream[self.stream.index("\n{") + 1:]
        with open(output, "w") as f:
            for i in range(60):  # 6 s of the client's run, polled every 0.1 s
                self.clock.t += 0.1
                on_poll()
                if i == 10:
                    f.write(head)  # the '<host>' lines, flushed early
                    f.flush()
            f.write(doc)  # at 106.0 s: the document, once the jobs have ended
        self.clock.t += 0.02
        on_poll()  # seen at 106.02 s
        if on_status is not None:
            on_status(documents(doc)[0])  # the real adapter passes on the one document it saw
        self.clock.t += 0.03  # the client exits
        return self.stream

    def _client_streamed(self, output, on_poll, on_status, statuses=None):
        """Status k of server s1 comes at 100 + k s (none before ``burst_until``), of s2 0.1 s later; once told to
        stop, each server's next status comes (its jobs ended) and the client exits 0.2 s later. With ``statuses``
        (a status.StatusFile) the documents are read from the output file through it, as the real adapter does."""
        per: dict[str, dict[str, list[dict]]] = {}
        for j in documents(self.stream)[0]["client_stats"]:
            if j.get("jobname") != "All clients":
                per.setdefault(f"{j['hostname']}:{j['port']}", {}).setdefault(j["jobname"], []).append(j)
        n = min(len(v) for jobs in per.values() for v in jobs.values())
        self.clock.t = 100.0
        stop = None
        with open(output, "w") as f:
            for k in range(n):
                for i, jobs in enumerate(per.values()):
                    self.clock.t = max(100.0 + k, self.burst_until) + 0.1 * i
                    doc = {"client_stats": [v[k] for v in jobs.values()]}
                    f.write(json.dumps(doc, indent=1) + "\n")
                    f.flush()
                    on_poll()
                    self.events.append(("status", k, i))
                    for got in (statuses.poll() if statuses is not None else [doc]):
                        if stop is None and on_status(got):
                            stop = k
                            self.events.append("stopped")
                if stop is not None and k > stop:
                    break
        self.clock.t += 0.2
        return Path(output).read_text()


#: fio 3.33's --status-interval=1 output: one local run of 2 streams, and one client run of 2 servers.
LOCAL = (DATA / "fio-status-local-2streams-randrw.json").read_text()
# the same job once on each of 2 fio servers, one `fio --client` with --status-interval=1 after each --client=
CLIENT = (DATA / "fio-status-client-2servers-randrw.json").read_text()

#: A two-configuration local plan on a scratch file ({dir}), 2 load points × 3 repeats: the session tests'.
PLAN = """
name = "fake"
baseline = "a"
workloads = ["tr3808-4k"]
[targets.t]
url = "{dir}/data.dat"
[[configurations]]
name = "a"
target = "t"
[[configurations]]
name = "b"
target = "t"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[[load_points]]
streams = 2
oio = 1
[method]
warmup = 0
duration = "1s"
repeats = 3
prepare = false
"""


class FakeAgent:
    def __init__(self, events):
        self.events = events

    def stop(self):
        self.events.append("agents stopped")

    def check(self):
        pass


class FakeTestbed(_Testbed):
    """A testbed whose life is a list of events; targets are the plan's own (a temp file)."""

    def __init__(self, plan, fio, events):
        from protolab.proc import SubprocessRunner
        from protolab.run.progress import Silent

        super().__init__(plan, fio, SubprocessRunner(), Silent())
        self.events = events
        self.kind = "fake"
        self.device_counted = None  # what its device model counts in each window (None: it has none)

    def describe(self):
        return {"kind": "fake"}

    def up(self, run_path):
        self.events.append("up")
        self.run_path = run_path
        self.agents = {"h": FakeAgent(self.events)}
        return self.describe()

    def down(self, keep_logs_in=None):
        self.stop_agents()
        self.events.append("down")

    def window(self):
        class W:
            def start(self_):
                self.events.append("window start")

            def sample(self_):
                return None

            def delta(self_, a, b):
                return {"elapsed_s": 1.0}

            def interpolate(self_, a, b, t):
                return None

            def progress(self_, sample):
                return None  # no traffic counted: a client run's boundaries are placed by fio's I/O time

            def device(self_, a, b):
                return self.device_counted
        return W()


def _order(events):
    return [e.removeprefix("measure ") for e in events if e.startswith("measure ")]


#: One configuration, one load point, a warm-up and a window to fill in: the status-window tests'.
STATUS_PLAN = """
name = "w"
baseline = "a"
workloads = ["tr3808-4k"]
[[configurations]]
name = "a"
target = "{dir}/data.dat"
[[load_points]]
streams = 2
oio = 1
[method]
warmup = "{warmup}"
duration = "{duration}"
repeats = 1
"""


def status_cell(tmp_path, warmup, duration):
    plan = load_plan_text(STATUS_PLAN.format(dir=tmp_path, warmup=warmup, duration=duration))
    cell = expand(plan)[0]
    access = resolve(str(tmp_path / "data.dat"), size=64 * 1024**2, ioengine="psync", direct=True)
    return plan, cell, [s for h in layout(cell, lambda h, g: access) for s in h]
