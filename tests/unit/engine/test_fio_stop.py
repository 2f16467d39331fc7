"""A fio that ignores SIGTERM, and the job processes it forked, are all gone after a bounded grace."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from protolab.engine.fio import stop_group

# a parent and a forked child (fio's job process), both ignoring SIGTERM, the child outliving the parent
STUBBORN = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid = os.fork()
if not pid:
    print(os.getpid(), flush=True)  # the child says who it is (one line: the parent prints nothing)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_stop_group_kills_a_process_group_that_ignores_sigterm():
    p = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = int(p.stdout.readline())
    assert child != p.pid
    time.sleep(0.2)
    t0 = time.monotonic()
    stop_group(p, grace=0.5)
    took = time.monotonic() - t0
    time.sleep(0.2)
    assert p.poll() is not None and not _alive(child)
    assert took >= 0.5  # SIGTERM was tried first, for the grace


# fio's job process as fio 3.33 forks it: it calls setsid() (backend.c, thread_main), so it leaves fio's process
# group; hung, it ignores SIGTERM (libiscsi's getevents goes back to its poll on EINTR)
OWN_SESSION = STUBBORN.replace("if not pid:\n", "if not pid:\n    os.setsid()\n")


def test_stop_group_kills_a_job_process_that_left_the_group_for_a_session_of_its_own():
    p = subprocess.Popen([sys.executable, "-c", OWN_SESSION], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    child = int(p.stdout.readline())
    time.sleep(0.2)
    assert os.getpgid(child) == child != p.pid  # not in fio's group: its SIGKILL alone leaves it
    stop_group(p, grace=0)
    time.sleep(0.2)
    assert p.poll() is not None and not _alive(child)
