"""The command line starts light: heavy modules load only in the commands that use them."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

HEAVY = ("scipy", "numpy", "matplotlib", "jinja2", "rich.progress")  # rich.progress: only `run` draws a bar
# `protolab --help` and `--version` are answered before the command line's framework loads (protolab.cli)
NOT_FOR_HELP = ("scipy", "numpy", "matplotlib", "jinja2", "pydantic", "typer", "rich", "protolab.report",
                "protolab.analysis", "protolab.plan", "protolab.commands")


def _loaded_after(argv: list[str], watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``watched`` (each with its submodules) loaded once `protolab ARGV` has run in a fresh process."""
    code = ("import sys\n"
            f"sys.argv = {['protolab', *argv]!r}\n"
            "from protolab.cli import main\n"
            "try:\n    main()\n"
            "except SystemExit:\n    pass\n"
            f"w = {watched!r}\n"
            "print('LOADED:' + ','.join(sorted(m for m in sys.modules if any(m == x or m.startswith(x + '.') "
            "for x in w))))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("LOADED:"))
    return [m for m in line.removeprefix("LOADED:").split(",") if m]


def test_help_plans_workloads_load_no_heavy_module():
    for argv in (["--help"], ["plans"], ["workloads"], ["report", "--help"], ["lab", "--help"]):
        assert [m for m in _loaded_after(argv) if m in HEAVY] == [], argv


def test_help_and_version_load_neither_typer_nor_the_report_nor_the_analysis():
    for argv in (["--help"], ["--version"], []):
        assert _loaded_after(argv, NOT_FOR_HELP) == [], argv


def test_the_lean_help_lists_every_command_typer_knows_with_typer_s_own_line():
    import typer.main

    from protolab.commands import app
    from protolab.usage import lean_help

    group = typer.main.get_command(app)
    commands = {name: c for name, c in group.commands.items() if not c.hidden}
    help_lines = lean_help().split("Commands:\n", 1)[1].splitlines()
    listed = {ln.split()[0]: ln.split(None, 1)[1] for ln in help_lines if ln.startswith("  ")}
    assert listed.keys() == commands.keys()
    for name, c in commands.items():
        assert listed[name] == c.get_short_help_str(limit=200), name
    opts = {o for p in group.get_params(group.make_context("protolab", [], resilient_parsing=True)) for o in p.opts}
    assert opts == {"--version", "--help"} and all(f"  {o} " in lean_help() for o in opts)


def test_help_and_version_answer_as_typer_did():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "protolab.cli", *a], capture_output=True, text=True,
                                    timeout=120, env=env)
    version, help_, bare = run("--version"), run("--help"), run()
    from protolab import __version__

    assert (version.returncode, version.stdout) == (0, f"protolab {__version__}\n")
    assert help_.returncode == 0 and help_.stdout.startswith("Usage: protolab [OPTIONS] COMMAND")
    assert bare.returncode == 2 and bare.stdout == help_.stdout  # no arguments: the help, and typer's exit code 2
    assert run("--version", "--help").returncode == 0  # other combinations go to typer


def test_a_bad_plan_or_run_directory_is_refused_before_numpy_and_scipy_load(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nbaseline = "nope"\nworkloads = ["tr3808-4k"]\n')
    for argv in (["run", str(bad)], ["validate", str(bad)], ["resume", str(tmp_path)], ["detach", str(tmp_path)]):
        assert [m for m in _loaded_after(argv) if m in HEAVY] == [], argv


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


def test_run_help_shows_the_plan_tables_it_names():
    """Rich reads '[lab.storage]' as markup and drops it unless escaped: the help said 'in place of the plan's ,'."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", "--help"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert "in place of the plan's [lab.storage]" in " ".join(p.stdout.replace("│", " ").split())
