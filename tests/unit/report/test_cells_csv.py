"""cells.csv at a report's end, written by a forked process while the report is built: the same file as written
here, written here when that process fails, and neither a process nor a temporary file left when it is stopped."""

from __future__ import annotations

import os
import time

from test_report_html import LOCAL, make_run

from protolab.report import cellscsv
from protolab.report.cellscsv import CellsCsv
from protolab.report.report_data import plan_of


def _written_here(rd) -> bytes:
    cellscsv.write(rd, rd.records(), plan_of(rd.manifest()))
    return (rd.path / "cells.csv").read_bytes()


def test_the_forked_process_writes_what_this_process_writes(tmp_path):
    rd = make_run(tmp_path, LOCAL)
    here = _written_here(rd)
    (rd.path / "cells.csv").unlink()
    cells = CellsCsv(rd, rd.records(), plan_of(rd.manifest()))
    assert (cells.process is not None) == ((os.cpu_count() or 1) > 1)
    pid = cells.process.pid if cells.process else None
    cells.finish()
    assert (rd.path / "cells.csv").read_bytes() == here
    assert len(here.splitlines()) == 1 + len(rd.records()) and b"device_model" in here.splitlines()[0]
    assert pid is None or not os.path.exists(f"/proc/{pid}")
    assert [p.name for p in rd.path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_forked_process_that_fails_leaves_the_file_to_this_one(tmp_path, monkeypatch):
    rd = make_run(tmp_path, LOCAL)
    here = _written_here(rd)
    (rd.path / "cells.csv").unlink()
    parent, real = os.getpid(), cellscsv.write

    def write_here_only(*args):
        if os.getpid() != parent:
            raise OSError("no space left on device")
        real(*args)

    monkeypatch.setattr(cellscsv, "write", write_here_only)
    cells = CellsCsv(rd, rd.records(), plan_of(rd.manifest()))
    if cells.process is not None:
        cells.process.join(30)
        assert cells.process.exitcode == 1  # it failed quietly: the one line is this process's to say
    cells.finish()
    assert (rd.path / "cells.csv").read_bytes() == here


def test_stopping_it_mid_write_leaves_no_process_and_no_temporary_file(tmp_path, monkeypatch):
    rd = make_run(tmp_path, LOCAL)
    parent, real = os.getpid(), cellscsv.write

    def slow_in_the_child(*args):
        if os.getpid() != parent:
            from protolab.results import rundir as store

            write_text = store.atomic_write

            def stalled(path, data, mode=None):  # the temporary file exists while it waits
                import tempfile

                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                try:
                    os.write(fd, b"half")
                    time.sleep(60)
                finally:
                    os.close(fd)
                    os.unlink(tmp)
                write_text(path, data, mode)

            store.atomic_write = stalled
        real(*args)

    monkeypatch.setattr(cellscsv, "write", slow_in_the_child)
    cells = CellsCsv(rd, rd.records(), plan_of(rd.manifest()))
    if cells.process is None:
        return  # one core: nothing is forked
    pid = cells.process.pid
    deadline = time.monotonic() + 30
    while not any(p.name.endswith(".tmp") for p in rd.path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(p.name.endswith(".tmp") for p in rd.path.iterdir())
    cells.stop()
    assert not os.path.exists(f"/proc/{pid}")
    assert [p.name for p in rd.path.iterdir() if p.name.endswith(".tmp")] == []
    assert cells.process is None
    cells.stop()  # a second stop does nothing


def test_the_drawing_workers_still_end_with_the_report_while_the_writer_runs(tmp_path):
    """The writer is forked after the drawing workers: it must not hold their pipes open, or a report process that
    dies would leave its workers for as long as the writer runs."""
    from protolab.report.drawer import Drawer

    if (os.cpu_count() or 1) < 2:
        return
    rd = make_run(tmp_path, LOCAL)
    r, w = os.pipe()
    report = os.fork()
    if report == 0:  # a report process that dies while cells.csv is being written
        os.close(r)
        drawer = Drawer()

        def stalled(*_args):
            time.sleep(60)

        cellscsv.write = stalled
        cells = CellsCsv(rd, rd.records(), plan_of(rd.manifest()), [conn for _, conn in drawer.workers])
        os.write(w, (",".join(str(p) for p in drawer.pids()) + f";{cells.process.pid}\n").encode())
        os._exit(0)
    os.close(w)
    line = os.read(r, 200).decode().strip()
    os.close(r)
    os.waitpid(report, 0)
    workers, writer = [int(x) for x in line.split(";")[0].split(",")], int(line.split(";")[1])
    try:
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers), workers
        assert _alive(writer)  # still writing: the workers did not wait for it
    finally:
        os.kill(writer, 9)


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
