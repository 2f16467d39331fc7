"""The fio adapter: find fio, ask its version and engines, run a job with live IOPS."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import ToolError
from ..plan.protocols import engines
from ..proc import Runner, SubprocessRunner, stop_group  # noqa: F401  (stop_group: also the tests')
from ..trust import project_deps  # noqa: F401  (also vm.image's)
from .status import StatusFile

if TYPE_CHECKING:  # only for annotations: telemetry is not needed to run fio
    from ..telemetry.cgroups import RoleCgroups

NEEDED_ENGINES = ("io_uring", "libaio", "psync", *engines())  # file engines, then the protocols' (plan.protocols)
_ETA_IOPS = re.compile(r"\[([^\]\[]*?)\s*IOPS\]")
_RATE = re.compile(r"([rwt])=([\d.]+)([kKmM]?)")


#: What an engine prints for an I/O that failed (the nfs engine: "Failed NFS operation(code:-14): …").
FAILED_OP = re.compile(r"Failed NFS operation|nfs: Failed to queue|io_u error on file")
#: What fio prints for a chunk that failed its verify check (engine.readback): its checksum, or its header's magic,
#: length, seed or offset ("crc32c: verify failed at file F offset O, …", "verify: bad magic header … at file F …").
FAILED_CHECK = re.compile(r"verify failed at file |verify: bad ")
#: The most such lines a run keeps (fio's JSON counts them all; the lines give the offsets).
MOST_CHECK_LINES = 10_000


def find_fio() -> tuple[str | None, str]:
    """fio's path and where it came from: $PROTOLAB_FIO, the installed project's .deps build, or PATH.

    Never the working directory: protolab runs as root, and a directory someone else controls must not supply
    the program it runs. Each candidate must pass ``trust.check_program`` (root-owned, nobody else can change
    it or a directory above it); an untrusted one raises ``UnsafePath`` instead of falling through to the next.
    """
    from ..trust import check_program

    env = os.environ.get("PROTOLAB_FIO")
    if env:
        return str(check_program(env, "PROTOLAB_FIO")), "PROTOLAB_FIO"
    candidate = project_deps() / "fio" / "bin" / "fio"
    if candidate.is_file():
        return str(check_program(candidate, "fio")), "project build (.deps/fio)"
    found = shutil.which("fio")
    if found:
        return str(check_program(found, "fio (from PATH)")), "PATH"
    return None, "not found"


def parse_eta_iops(line: str) -> float | None:
    """Total IOPS from one of fio's status lines ('[r=34.2k,w=11.4k IOPS]'), or None."""
    m = _ETA_IOPS.search(line)
    if not m:
        return None
    total = 0.0
    for _, num, unit in _RATE.findall(m.group(1)):
        total += float(num) * {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}[unit]
    return total


STOP_GRACE_S = 5.0  # a fio that ignores SIGTERM this long is killed
POLL_S = 0.02  # how often a watched run reads fio's new status documents (a boundary is sampled this late at most)


@dataclass
class Fio:
    """One fio binary, called through an injected runner."""

    path: str
    runner: Runner = field(default_factory=SubprocessRunner)
    cgroups: RoleCgroups | None = None  # telemetry.cgroups.RoleCgroups: every fio run joins its "loadgen" cgroup
    #: Lines of the last run that report a failed I/O operation (fio 3.33's nfs engine prints them
    #: while its job's error count stays 0).
    op_errors: list[str] = field(default_factory=list)
    #: Lines of the last run that report a block that failed its verify check (engine.readback).
    verify_lines: list[str] = field(default_factory=list)

    @classmethod
    def locate(cls, runner: Runner | None = None) -> "Fio":
        """The fio protolab should use; ToolError with what to do when there is none."""
        path, origin = find_fio()
        if not path:
            raise ToolError("fio: not found; run 'make deps' to build it, or set PROTOLAB_FIO=/path/to/fio")
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ToolError(f"fio: {path} (from {origin}) is not an executable file; fix PROTOLAB_FIO or run "
                            "'make deps'")
        return cls(path, runner or SubprocessRunner())

    def version(self) -> str:
        """'fio-3.33'."""
        return self.runner.run([self.path, "--version"], timeout=30).stdout.strip()

    def engines(self) -> list[str]:
        """The I/O engines this fio was built with."""
        out = self.runner.run([self.path, "--enghelp"], timeout=30).stdout
        return [ln.strip() for ln in out.splitlines()[1:] if ln.strip()]

    def missing_engines(self, needed: tuple[str, ...] = NEEDED_ENGINES) -> list[str]:
        """Engines protolab may need that this fio lacks."""
        have = set(self.engines())
        return [e for e in needed if e not in have]

    def run_job(
        self,
        job_file: Path,
        output: Path,
        *,
        netns: str | None = None,
        on_iops: Callable[[float], None] | None = None,
        timeout: float | None = None,
        label: str = "fio",
        on_status: Callable[[dict], bool] | None = None,
        status_interval_s: int = 1,
        on_poll: Callable[[], None] | None = None,
    ) -> str:
        """Run ``job_file`` writing json+ to ``output``; call ``on_iops`` with live IOPS; return the JSON text.

        ``on_status``: fio prints a cumulative status document every ``status_interval_s``, and each is passed to
        ``on_status`` as it is written; when it returns True, fio is stopped (gracefully: its last
        document is written) — see ``engine.status``. ``on_poll``: as ``run``'s (an error it raises stops fio).
        """
        args = [f"--status-interval={int(status_interval_s)}", str(job_file)] if on_status else [str(job_file)]
        return self.run(args, output, netns=netns, on_iops=on_iops, timeout=timeout, label=label,
                        on_status=on_status, on_poll=on_poll)

    def run_clients(
        self,
        clients: list[tuple[str, Path]],
        output: Path,
        *,
        cwd: Path | None = None,
        timeout: float | None = None,
        label: str = "fio",
        netns: str | None = None,
        status_interval: bool | int = False,
        on_poll: Callable[[], None] | None = None,
        on_status: Callable[[dict], bool] | None = None,
        statuses: StatusFile | None = None,
    ) -> str:
        """One `fio --client` run over several servers: (client argument, job file) per host.

        ``netns``: where the client runs (a guest's fio server is forwarded on 127.0.0.1 of its host's namespace).
        ``status_interval``: each server sends a cumulative status every that many seconds (True: 1). fio 3.33's
        client prints them only at the end, all in one document (client.c: handle_ts, fio_client_json_fini);
        with ``on_status`` the client is asked to print each server's status as it comes (protolab's fio patch
        0004, FIO_CLIENT_STREAM), and ``on_status`` gets each such document, as in ``run`` (True: stop the run;
        the client then tells its servers to end their jobs, which send their last status). A client without
        the patch prints everything at the end. ``on_poll`` is called every ``POLL_S`` while the client runs.
        ``statuses``: the reader of ``output`` the run reads its statuses with (``status.StatusFile``; with ``keep``
        it goes on reading after a stop, and the caller has every document without reading the file again).
        """
        # --status-interval after --client=… is sent to that server (a FIO_CLIENT_FLAG option in init.c)
        per = [f"--status-interval={int(status_interval)}"] if status_interval else []
        args = [a for arg, job in clients for a in (f"--client={arg}", *per, str(job))]
        return self.run(args, output, netns=netns, cwd=cwd, timeout=timeout, label=label, on_poll=on_poll,
                        files_under=Path(output).parent, on_status=on_status, stream=on_status is not None,
                        statuses=statuses)

    def run(
        self,
        args: list[str],
        output: Path,
        *,
        netns: str | None = None,
        cwd: Path | None = None,
        on_iops: Callable[[float], None] | None = None,
        timeout: float | None = None,
        label: str = "fio",
        on_status: Callable[[dict], bool] | None = None,
        on_poll: Callable[[], None] | None = None,
        files_under: Path | None = None,
        stream: bool = False,
        statuses: StatusFile | None = None,
    ) -> str:
        """Run fio with ``args`` writing json+ to ``output``; return the JSON text ('' when ``statuses`` kept the
        documents it read: they are the caller's, ``statuses.finish()``).

        ``files_under``: a client run accepts the files its servers name (IO logs to write, files to send) only
        inside this directory (protolab's fio patch 0002: FIO_CLIENT_FILES_UNDER). ``stream``: a client run
        prints each server's status as it comes (patch 0004: FIO_CLIENT_STREAM).

        ``on_status`` gets each document fio writes to ``output`` while it runs (with --status-interval);
        returning True stops fio's process group with SIGTERM, which fio handles by ending its jobs and
        writing its last document (exit code 128, taken as success: the caller has what it asked for).
        ``on_poll`` is called every ``POLL_S``, on a thread of its own (see ``_watch``); ``statuses`` reads
        ``output`` (a new ``StatusFile`` when None).
        """
        argv = [self.path, "--output-format=json+", f"--output={output}", "--eta=always", "--eta-newline=1", *args]
        if files_under is not None:
            argv = ["env", f"FIO_CLIENT_FILES_UNDER={Path(files_under).absolute()}",
                    *(["FIO_CLIENT_STREAM=1"] if stream else []), *argv]
        # a direct run's fio is the load generator: it joins the "loadgen" cgroup (before ip netns exec hides
        # /sys/fs/cgroup). A client run's jobs run in its servers, which are there already; the client itself
        # gathers their statuses for protolab and stays with it (the harness), as on the user's own hosts,
        # where it runs on this machine, not on theirs: its CPU is no load host's, and 160 busy jobs beside it
        # in one cgroup delayed the statuses it passes on by seconds
        if self.cgroups is not None and files_under is None:
            argv, netns = self.cgroups.wrap("loadgen", argv, netns), None
        # a window measured again (resume) must not be read from the output its first attempt left
        Path(output).unlink(missing_ok=True)
        proc = self.runner.spawn(argv, netns=netns, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
        tail: list[str] = []
        self.op_errors, self.verify_lines = [], []

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                for part in line.replace("\r", "\n").splitlines():
                    if not part.strip():
                        continue
                    if FAILED_CHECK.search(part):  # a block that failed its verify check: counted, not an error
                        if len(self.verify_lines) < MOST_CHECK_LINES:
                            self.verify_lines.append(part.strip())
                        continue
                    if FAILED_OP.search(part):  # an engine's failed I/O that fio's job error count misses
                        self.op_errors.append(part.strip())
                        continue
                    iops = parse_eta_iops(part)
                    if iops is not None:
                        if on_iops:
                            on_iops(iops)
                    else:
                        tail.append(part.strip())
                        del tail[:-20]

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        stopped = False
        try:
            if on_status is None and on_poll is None:
                rc = proc.wait(timeout=timeout)
            else:
                rc, stopped = self._watch(proc, statuses or StatusFile(output), timeout, on_status, on_poll)
        except subprocess.TimeoutExpired:
            stop_group(proc, grace=STOP_GRACE_S)
            raise ToolError(f"{label}: fio did not finish within {timeout:g} s and was killed; see "
                            f"{output.parent}") from None
        except BaseException:
            stop_group(proc, grace=0)  # a signal stops the run: no grace, the teardown waits
            raise
        reader.join(timeout=5)
        # statuses that kept what they read have the documents: the output (tens of MB) is not read again
        kept = statuses is not None and statuses.keep and bool(statuses.kept)
        text = "" if kept else output.read_text() if output.exists() else ""
        if stopped:  # stopped by us once it had written what the caller needed (128: fio's exit on SIGTERM)
            rc = 0
        if rc != 0 or ("{" not in text and not kept):
            # a failed I/O fio ended on is an op_errors line (libnbd's ENOTCONN: the tail's last was "Jobs: 1 (f=1)")
            why = next((t for t in reversed(tail) if "error" in t.lower() or "fio:" in t or "refused" in t.lower()),
                       self.op_errors[-1] if self.op_errors else tail[-1] if tail else f"exit code {rc}")
            raise ToolError(f"{label}: fio failed: {why}")
        return text

    def _watch(self, proc: subprocess.Popen, statuses: StatusFile, timeout: float | None,
               on_status: Callable[[dict], bool] | None, on_poll: Callable[[], None] | None) -> tuple[int, bool]:
        """Wait for fio, passing each new status document to ``on_status``; (exit code, stopped).

        ``on_poll`` runs on a thread of its own, joined before this returns: a client run's telemetry tick reads
        hundreds of /proc files, which took seconds while 160 fio jobs held both cores, and the status that ends
        the window must be read, and fio stopped, within a poll whatever the tick is doing. A reader that keeps
        its documents is read on after the stop, while fio ends its jobs."""
        import os
        import signal
        import time

        stopped = False
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = _Poller(on_poll) if on_poll is not None else None
        ended = _Ended(proc)
        try:
            while True:
                rc = ended.within(POLL_S)
                if rc is not None:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(proc.args, timeout or 0)
                if poller is not None:
                    poller.check()
                if on_status is None or (stopped and not statuses.keep):
                    continue
                for doc in statuses.poll():
                    if not stopped and on_status(doc):
                        stopped = True
                        try:  # fio and its job processes: each ends its jobs and the main one writes its last status
                            os.killpg(proc.pid, signal.SIGTERM)
                        except (ProcessLookupError, PermissionError):
                            pass
                        break
        finally:
            ended.close()
            if poller is not None:
                poller.done.set()  # an error or a signal: stopping fio does not wait for a poll under way
        if poller is not None:
            poller.join()
            poller.check()
        return rc, stopped


class _Ended:
    """Whether a process has ended, waited for a poll's time at most: on its pidfd, one wake-up a poll and at once
    when it ends (``Popen.wait(timeout)`` sleeps and wakes ~6 times a poll: 4x the CPU, beside 160 busy jobs);
    without one (Linux before 5.3), as ``Popen.wait`` does."""

    def __init__(self, proc: subprocess.Popen):
        import os

        self.proc = proc
        try:
            self.fd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.fd = None

    def within(self, seconds: float) -> int | None:
        """The exit code once the process has ended within ``seconds``, else None."""
        import select

        if self.fd is None:
            try:
                return self.proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                return None
        waiting = select.poll()
        waiting.register(self.fd, select.POLLIN)
        waiting.poll(seconds * 1000.0)
        return self.proc.poll()

    def close(self) -> None:
        import os

        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Poller:
    """Calls ``on_poll`` every ``POLL_S`` on a thread of its own until ``done``; an error it raises is raised again
    by ``check`` on the caller's thread."""

    def __init__(self, on_poll: Callable[[], None]):
        self.on_poll, self.error = on_poll, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="protolab-fio-poll", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.done.wait(POLL_S):
                self.on_poll()
        except BaseException as e:  # noqa: BLE001 — handed to the caller's thread
            self.error = e

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def join(self) -> None:
        """Stop polling and wait for a poll under way (its results are the caller's from now on)."""
        self.done.set()
        self.thread.join()
