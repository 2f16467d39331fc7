"""A faulted window's fio that stops answering (fio's libiscsi engine after tgt's restart: engine.hangwatch): the
watch's rule on a clock, and fio.run stopping a real process group that never ends, with the reason as its error."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from protolab.engine.fio import Fio
from protolab.engine.hangwatch import HangWatch, Overdue
from protolab.errors import ToolError


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_the_watch_waits_for_the_windows_length_and_its_margin_then_says_why():
    clock = Clock()
    watch = HangWatch(6.0, 12.0, clock)
    clock.t = 1000.0
    assert watch() is None  # the warm-up: the window has not started
    watch.window_started()
    clock.t += 3.0
    watch.status()
    clock.t += 14.9  # 17.9 s into it: 6 + 12 not yet
    assert watch() is None
    clock.t += 0.2
    assert watch() == ("fio hung: its jobs had not ended 18.1 s into a window of 6 s (its last status 3.0 s into "
                       "it); protolab stopped it")


def test_the_watch_says_when_fio_wrote_no_status_in_the_window():
    clock = Clock()
    watch = HangWatch(2.0, 1.0, clock)
    watch.status()  # the warm-up's
    clock.t += 1.0
    watch.window_started()
    clock.t += 3.5
    assert "(no status since it started)" in watch()


#: A stand-in for fio whose job hangs: one status document, then a child (its "job") and itself never end.
HANGS = """
import subprocess, sys, time
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--output=")][0]
open(out, "w").write('{"jobs": []}\\n')
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
time.sleep(120)
"""


class StandIn:
    """Runs a stand-in script with fio's arguments, in a session of its own as the real runner does."""

    def __init__(self, script: str = HANGS):
        self.script = script
        self.procs: list[subprocess.Popen] = []

    def spawn(self, argv, *, netns=None, stdout=None, stderr=None, stdin=None, cwd=None):
        p = subprocess.Popen([sys.executable, "-c", self.script, *argv[1:]], stdout=stdout, stderr=stderr,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        self.procs.append(p)
        return p


def test_fio_that_never_ends_is_stopped_with_its_group_when_the_watch_says_so(tmp_path):
    runner = StandIn()
    watch = HangWatch(0.3, 0.3)
    watch.window_started()
    started = time.monotonic()
    with pytest.raises(Overdue, match=r"^fio hung: its jobs had not ended 0\.[6-9] s into a window of "
                                      r"0\.3 s \(.*\); protolab stopped it$"):
        Fio("fio", runner).run_job(tmp_path / "j.fio", tmp_path / "o.json", on_status=lambda doc: False, timeout=60,
                                   label="cell x", on_poll=watch.check)
    assert time.monotonic() - started < 10  # not fio's timeout
    [p] = runner.procs
    assert p.poll() is not None and (tmp_path / "o.json").read_text() == '{"jobs": []}\n'
    deadline = time.monotonic() + 5  # SIGKILL's delivery to the "job" is not waited for: a moment
    while living(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert living(p.pid) == []  # the whole group is gone: the hung "job" too


def living(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (an orphan's zombie waits for a PID 1 that may not reap)."""
    out = []
    for d in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if stat[2] == str(pgid) and stat[0] != "Z":
            out.append(int(d))
    return out


#: fio's last lines when libnbd's read failed after nbdkit's restart (tests/lab/test_faults_lab.py, 2026-12-07): the
#: failed I/O, then a status line; exit 1.
NBD_GAVE_UP = """
import sys
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--output=")][0]
open(out, "w").write('{"jobs": []}\\n')
print("fio: io_u error on file nbd://198.18.0.1:10809: Transport endpoint is not connected: read offset=4096, "
      "buflen=4096")
print("Jobs: 1 (f=1)")
sys.exit(1)
"""


def test_fio_that_gave_up_on_a_failed_io_says_that_io_not_its_last_status_line(tmp_path):
    with pytest.raises(ToolError, match=r"^cell x: fio failed: fio: io_u error on file nbd://198\.18\.0\.1:10809: "
                                        r"Transport endpoint is not connected: read offset=4096, buflen=4096$"):
        Fio("fio", StandIn(NBD_GAVE_UP)).run_job(tmp_path / "j.fio", tmp_path / "o.json", on_status=lambda d: False,
                                                 timeout=60, label="cell x")
