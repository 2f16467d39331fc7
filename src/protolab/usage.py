"""The table of protolab's commands, one line each, and the top-level help drawn from it: `protolab --help` prints
it before typer loads (protolab.cli), and the typer application's commands take their short help from it
(protolab.commands), so the two cannot drift (tests/unit/test_cli_startup.py)."""

from __future__ import annotations

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
    "history": "The runs of one study over time: environment, headline figures, called changes; an HTML page.",
    "check": "Check a run against a baseline run by acceptance rules, for CI: exit 0 all hold, 1 one is broken.",
    "lab": "Bring the embedded lab up, show it, take it down.",
}
OPTIONS = {"--version": "Print protolab's version and exit.", "--help": "Show this message and exit."}


def lean_help() -> str:
    """The top-level help, from the tables above."""
    width = max(map(len, SUMMARY))
    return "\n".join(["Usage: protolab [OPTIONS] COMMAND [ARGS]...", "", f"  {APP_HELP}", "", "Options:",
                      *(f"  {o:<{width + 2}}  {h}" for o, h in OPTIONS.items()), "", "Commands:",
                      *(f"  {c:<{width + 2}}  {h}" for c, h in SUMMARY.items()),
                      "", "protolab COMMAND --help: the command's arguments and options."]) + "\n"
