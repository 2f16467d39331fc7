"""The command line's front door: the table of commands, and `protolab --help` and `--version` answered from it
before typer, rich or any phase is imported (typer's own help drew in rich.markdown and markdown_it: ~65 ms of a
~20 ms interpreter start). Every other command line goes to the typer application, protolab.commands, whose
commands take their one-line help from the same table (tests/unit/test_cli_startup.py checks the two agree)."""

from __future__ import annotations

import sys

APP_HELP = "protolab — a storage protocol lab: plan a study, provision it, load it with fio, measure, report."

#: Each command with the one line `protolab --help` shows for it, in the order shown.
SUMMARY = {
    "run": "Run a study: measure every cell, store the run directory, print the relative table, write the report.",
    "resume": "Continue an interrupted or failed run: measure the missing and failed cells, then write the report.",
    "detach": "Detach what a killed run left attached on its hosts, for a run you will not resume.",
    "validate": "Check a plan as `run` would, and show the matrix it expands to, without running anything.",
    "plans": "List the built-in studies: their seed study and their measurement time at each scale.",
    "workloads": "List the built-in workloads (access specs), one line each.",
    "doctor": "Show what is installed and what this machine allows: the embedded lab, virtual machines.",
    "limits": "Show the wire's ceiling in IOPS and MB/s for a protocol, link, MTU and workload.",
    "report": "Regenerate a run's report (report.html, report.md, figures/, tables/) from its run directory.",
    "compare": "The same study on two environments: A = 100, B relative, with 95 % CIs and corrected significance.",
    "lab": "Bring the embedded lab up, show it, take it down.",
}
#: The command lines answered here, without typer.
LEAN = ([], ["--help"], ["--version"])
OPTIONS = {"--version": "Print protolab's version and exit.", "--help": "Show this message and exit."}


def lean_help() -> str:
    """The top-level help, from the tables above."""
    width = max(map(len, SUMMARY))
    return "\n".join(["Usage: protolab [OPTIONS] COMMAND [ARGS]...", "", f"  {APP_HELP}", "", "Options:",
                      *(f"  {o:<{width + 2}}  {h}" for o, h in OPTIONS.items()), "", "Commands:",
                      *(f"  {c:<{width + 2}}  {h}" for c, h in SUMMARY.items()),
                      "", "protolab COMMAND --help: the command's arguments and options."]) + "\n"


def main() -> None:
    """Entry point: `--help`, `--version` and no arguments (help, exit 2, as typer does) answered here; every other
    command line by the typer application (protolab.commands.main: one-line errors, exit 2)."""
    args = sys.argv[1:]
    if args == ["--version"]:
        from . import __version__

        sys.stdout.write(f"protolab {__version__}\n")
        sys.exit(0)
    if args in LEAN:
        sys.stdout.write(lean_help())
        sys.exit(0 if args else 2)
    from .commands import main as run_commands

    run_commands()


def __getattr__(name: str):
    """The typer application and its helpers (``protolab.cli.app``) stay reachable here, loaded on first use."""
    if name.startswith("__"):
        raise AttributeError(name)
    from . import commands

    return getattr(commands, name)


def console() -> None:
    """The `protolab` console script: main(), left at once when done (protolab.leave)."""
    if sys.argv[1:] in LEAN:
        main()  # exits: nothing else loaded (not even threading, for protolab.leave)
    from .leave import leave_after

    leave_after(main)


if __name__ == "__main__":
    console()
