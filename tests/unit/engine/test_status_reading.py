"""fio's status documents read as fio writes them: each parsed once, in order, the same documents as the whole file
gives; and a run's telemetry tick, on a thread of its own, never holds up the status that stops fio."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading

import pytest
from test_streamed import _split

from fakes import CLIENT, LOCAL
from protolab.engine.fio import Fio
from protolab.engine.status import StatusFile, documents
from protolab.proc import SubprocessRunner


def _written_in_pieces(path, text: str, seed: int):
    """Yield after each piece of ``text`` appended to ``path`` (pieces of 1 to 4,000 bytes, cut anywhere: inside a
    document, a line, a UTF-8 character)."""
    data, rng, i = text.encode(), random.Random(seed), 0
    with open(path, "wb") as f:
        while i < len(data):
            n = rng.randint(1, 4000)
            f.write(data[i:i + n])
            f.flush()
            i += n
            yield


#: a streamed client run (fio patch 0004): the '<host>' lines, then a document per server and status
STREAMED = CLIENT[:CLIENT.index("\n{") + 1] + "".join(json.dumps(d, indent=2) + "\n" for d in _split(CLIENT))


@pytest.mark.parametrize("text", [LOCAL, STREAMED, STREAMED.replace('"jobname": "', '"jobname": "é')],
                         ids=["direct", "client", "utf-8"])
def test_polled_while_written_the_documents_are_those_of_the_whole_file(tmp_path, text):
    out = tmp_path / "o.json"
    reader, polled = StatusFile(out, keep=True), []
    assert reader.poll() == []  # no file yet
    for _ in _written_in_pieces(out, text, seed=len(text)):
        polled += reader.poll()
    whole = documents(text)
    assert len(whole) >= 2 and reader.finish() == whole
    assert polled == whole[:len(polled)] and len(polled) >= len(whole) - 1  # the last one may wait for finish()


def test_a_document_cut_short_or_malformed_ends_the_documents_as_in_the_whole_file(tmp_path):
    docs = documents(LOCAL)
    one, two = (json.dumps(d, indent=2) + "\n" for d in docs[:2])
    out = tmp_path / "o.json"
    for text in (one + '{\n  "jobs" : [ oops\n}\n' + two,  # malformed: nothing after it is read
                 one + two + '{\n  "jobs" : [\n'):  # the last one cut short (fio killed while writing)
        reader = StatusFile(out, keep=True)
        for _ in _written_in_pieces(out, text, seed=7):
            reader.poll()
        assert reader.finish() == documents(text) == docs[:1 + (text.count("oops") == 0)]


def test_a_reader_that_does_not_keep_reads_the_file_afresh_at_the_end(tmp_path):
    out = tmp_path / "o.json"
    out.write_text(LOCAL)
    reader = StatusFile(out)
    assert reader.poll() and reader.kept == [] and reader.finish() == documents(LOCAL)


# a fio client as far as Fio.run sees it: a status document every 50 ms, and when told to stop (SIGTERM) its last one
STUB = """#!{python}
import json, signal, sys, time
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--output="))
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
def status(k, last=False):
    job = {{"jobname": "j", "hostname": "h", "port": 1, "job_runtime": 1000 * k,
           "read": {{"runtime": 1000 * k, "total_ios": 10 * k, "io_bytes": 40960 * k}}}}
    with open(out, "a") as f:
        f.write(json.dumps({{"client_stats": [job], "last": last}}, indent=2) + "\\n")
for k in range(1, 2000):
    if stop:
        status(k, last=True)
        sys.exit(0)
    status(k)
    time.sleep(0.05)
"""


def _stub(tmp_path) -> Fio:
    path = tmp_path / "fio"
    path.write_text(STUB.format(python=sys.executable))
    path.chmod(0o755)
    return Fio(str(path), SubprocessRunner())


def test_a_tick_under_way_does_not_hold_up_the_status_that_stops_fio(tmp_path):
    """The tick (``on_poll``) waits until the status that stops fio has been read: were both on one thread, the
    stop would wait for the tick, and the tick for the stop (60 s, then the test fails)."""
    fio, out = _stub(tmp_path), tmp_path / "o.json"
    stopped, ticks, seen = threading.Event(), [], []

    def on_status(doc):
        seen.append(doc["client_stats"][0]["job_runtime"])
        if len(seen) == 3:
            stopped.set()
            return True
        return False

    def on_poll():
        ticks.append(stopped.wait(60) if not ticks else stopped.is_set())

    reader = StatusFile(out, keep=True)
    text = fio.run_clients([("sock:x", tmp_path / "job.fio")], out, timeout=120, status_interval=1, on_poll=on_poll,
                           on_status=on_status, statuses=reader)
    assert text == ""  # the documents are the reader's: the output is not read again
    assert ticks[0] is True and seen == [1000, 2000, 3000]  # on_status is not called after the stop
    kept = reader.finish()
    assert kept == documents(out.read_text()) and kept[-1]["last"] is True  # read on after the stop, to fio's end
    assert threading.current_thread() is threading.main_thread()


def test_an_error_in_a_tick_stops_the_run_and_is_raised(tmp_path):
    fio, out = _stub(tmp_path), tmp_path / "o.json"

    def on_poll():
        raise RuntimeError("the tick failed")

    with pytest.raises(RuntimeError, match="the tick failed"):
        fio.run_clients([("sock:x", tmp_path / "job.fio")], out, timeout=120, status_interval=1, on_poll=on_poll,
                        on_status=lambda doc: False)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "popen"])
def test_a_run_is_seen_to_end_with_its_exit_code(monkeypatch, pidfd):
    from protolab.engine.fio import _Ended

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)  # Linux before 5.3: as Popen.wait does
    proc = subprocess.Popen(["sh", "-c", "read line; exit 3"], stdin=subprocess.PIPE, text=True)
    ended = _Ended(proc)
    assert (ended.fd is not None) == pidfd
    assert ended.within(0.05) is None  # still running
    proc.stdin.write("go\n")
    proc.stdin.close()
    assert ended.within(60) == 3
    ended.close()
    assert ended.fd is None
