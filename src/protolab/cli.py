"""The command line's front door: `protolab --help` and `--version` answered from the table of commands
(protolab.usage) before typer, rich or any phase is imported (typer's own help drew in rich.markdown and
markdown_it: ~65 ms of a ~20 ms interpreter start). Every other command line goes to the typer application,
protolab.commands, whose commands take their one-line help from the same table."""

from __future__ import annotations

import sys

from .usage import lean_help

#: The command lines answered here, without typer.
LEAN = ([], ["--help"], ["--version"])


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
