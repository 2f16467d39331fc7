"""The command line starts light: heavy modules load only in the commands that use them."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

HEAVY = ("scipy", "numpy", "matplotlib", "jinja2", "rich.progress")  # rich.progress: only `run` draws a bar


def _loaded_after(argv: list[str]) -> list[str]:
    code = ("import sys\n"
            f"sys.argv = {['protolab', *argv]!r}\n"
            "from protolab.cli import main\n"
            "try:\n    main()\n"
            "except SystemExit:\n    pass\n"
            f"print('LOADED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("LOADED:"))
    return [m for m in line.removeprefix("LOADED:").split(",") if m]


def test_help_plans_workloads_load_no_heavy_module():
    for argv in (["--help"], ["plans"], ["workloads"], ["report", "--help"], ["lab", "--help"]):
        assert _loaded_after(argv) == [], argv


def test_a_bad_plan_or_run_directory_is_refused_before_numpy_and_scipy_load(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nbaseline = "nope"\nworkloads = ["tr3808-4k"]\n')
    for argv in (["run", str(bad)], ["validate", str(bad)], ["resume", str(tmp_path)], ["detach", str(tmp_path)]):
        assert _loaded_after(argv) == [], argv


def test_the_console_script_leaves_at_once_with_its_code_and_its_output_flushed():
    """The console script ends the process with os._exit after a command that ended normally (a 10,000-window report's
    objects took ~0.9 s to free at exit): the code and every line printed still reach the caller."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    ok = subprocess.run([sys.executable, "-m", "protolab.cli", "workloads"], capture_output=True, text=True,
                        timeout=120, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "tr3808-4k" in ok.stdout and ok.stdout.endswith("\n")
    bad = subprocess.run([sys.executable, "-m", "protolab.cli", "report", "/nonexistent-run"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert bad.returncode == 2
    assert bad.stderr.startswith("protolab: error: /nonexistent-run") and bad.stderr.count("\n") == 1


def test_the_console_script_waits_for_a_thread_still_running(monkeypatch):
    """A non-daemon thread still alive: Python's usual exit (which waits for it), never os._exit."""
    import threading

    from protolab import leave

    left: list[int] = []

    class Left(Exception):
        pass

    def _exit(code: int) -> None:
        left.append(code)
        raise Left

    monkeypatch.setattr(leave.os, "_exit", _exit)
    main = lambda: sys.exit(3)  # noqa: E731
    try:
        leave.leave_after(main)
    except Left:
        pass
    assert left == [3]
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        try:
            leave.leave_after(main)
        except SystemExit as e:
            assert e.code == 3
        else:
            raise AssertionError("console() left at once with a thread still running")
    finally:
        release.set()
        worker.join()
    assert left == [3]
