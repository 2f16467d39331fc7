"""The one fake fio of the unit tests: fio as protolab's callers see it, without running it.

Three uses: validation needs only ``version()`` and ``engines()``; a session gets every window answered with one
captured json+ document (``answer``), with failures (``fail``: cell ids) and a signal (``interrupt_at``: the n-th
run) injected; a status stream (``stream``: fio's --status-interval output) is written one document at a time and
stops where the caller says, and a client run (``run_clients``) is paced by the test's ``clock``.
"""

from __future__ import annotations

import json
from pathlib import Path

from protolab.engine.status import documents
from protolab.errors import ToolError

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
        self._engines = engines or ENGINES
        self.runs = 0
        self.op_errors: list[str] = []
        self.job = ""
        self.clock = None

    def version(self):
        return self._version

    def engines(self):
        return self._engines

    def run_job(self, job, output, *, netns=None, on_iops=None, timeout, label, on_status=None, status_interval_s=1):
        self.runs += 1
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

    def run_clients(self, clients, output, *, cwd=None, timeout, label, status_interval, on_poll, netns=None):
        """A client run of two servers: the '<host>' lines early, the document once the jobs end (``stream``)."""
        assert status_interval and len(clients) == 2 and self.stream is not None and self.clock is not None
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
        self.clock.t += 0.03  # the client exits
        return self.stream
