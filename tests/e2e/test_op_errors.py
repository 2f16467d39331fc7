"""Failed operations that fio prints but does not count (fio 3.33's nfs engine) become the cell's errors."""

from __future__ import annotations

import os
import stat

from protolab.engine.fio import Fio
from protolab.plan.load import load_plan_text
from protolab.report.report_cli import write_report
from protolab.run import Study

PLAN = """name = "ops"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1, oio = 2 }]
[method]
warmup = 0
duration = 1
repeats = 1
data_size = "4M"
[[configurations]]
name = "a"
target = "./t.dat"
ioengine = "psync"
"""


def test_failed_nfs_operations_are_errors_named_in_the_report(fio_path, tmp_path, monkeypatch):
    # the real fio measures; the wrapper adds the line fio 3.33's nfs engine prints for a failed read
    wrapper = tmp_path / "fio-with-failures"
    # (the wrapper outlives the SIGTERM that ends fio at the window's end, as fio itself does)
    wrapper.write_text(f'#!/bin/sh\ntrap "" TERM\n"{fio_path}" "$@"; rc=$?\n'
                       'case "$*" in *--output=*) echo "Failed NFS operation(code:-14): injected read failure";; esac\n'
                       'exit $rc\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.chdir(tmp_path)
    plan = load_plan_text(PLAN)
    rundir = Study(plan, PLAN, "ops.toml", results_root=tmp_path / "results", fio=Fio(str(wrapper))).run()
    [rec] = rundir.records()
    assert rec.result.iops > 0
    assert rec.result.errors == 1
    assert "fio reported 1 failed I/O operation that its job error count missed" in rec.result.error_messages[0]
    assert "Failed NFS operation(code:-14): injected read failure" in rec.result.error_messages[0]
    write_report(rundir, figures=False)
    md = (rundir.path / "report.md").read_text()
    assert "**1 measured window had I/O errors**" in md and "injected read failure" in md
    assert os.path.getsize(rundir.path / "cells.csv") > 0
