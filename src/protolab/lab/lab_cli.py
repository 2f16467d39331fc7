"""``protolab lab up PLAN | status | down [--all]``: the embedded lab by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ProtolabError

# The lab itself (and the plan models it needs) is imported inside each command: registering these
# commands must cost `protolab --help` nothing.

lab_app = typer.Typer(
    help="The embedded lab: bring it up from a plan, show it, tear it down.",
    no_args_is_help=True,
)

WORKDIR_HELP = "Lab directory (record, pool, logs); default /var/lib/protolab/<prefix> (root's alone)."


def lab_protocols(plan) -> set[str]:
    """The lab protocols a plan's configurations use (``lab:iscsi`` → ``iscsi``)."""
    from ..plan.preflight import lab_protocols as used

    return used(plan)


def _workdir(workdir: Optional[Path], prefix: str) -> Path:
    from .lab import default_workdir

    return workdir if workdir is not None else default_workdir(prefix)


@lab_app.command("up")
def up(
    plan: Path = typer.Argument(..., help="The plan file whose [lab] table and lab:… targets to build."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
) -> None:
    """Build the lab of PLAN and leave it running; prints how to reach each export."""
    from ..plan.load import load_plan
    from ..plan.preflight import Environment, preflight
    from ..plan.topology import LabSpec
    from .lab import Lab
    from .netns import kernel_netem

    p = load_plan(plan)
    spec = p.lab if p.lab is not None else LabSpec()
    preflight(p, str(plan), Environment.of_machine(None, _workdir(workdir, spec.prefix), kernel_netem()))
    protocols = lab_protocols(p)
    if not protocols:
        raise ProtolabError(f"{plan}: no configuration targets the lab; use a target like \"lab:nbd\"")
    lab = Lab(spec, protocols, _workdir(workdir, spec.prefix))
    lab.holder_kind = "lab-up"  # the lab outlives this command: held until 'lab down'
    lab.up()
    typer.echo(lab.describe())


@lab_app.command("status")
def status(
    prefix: str = typer.Option("pl", "--prefix", help="The lab's prefix (lab.prefix in the plan)."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
) -> None:
    """Show the lab that is up: topology, addresses, exports, server processes."""
    from .lab import Lab

    typer.echo(Lab.from_record(_workdir(workdir, prefix)).describe())


@lab_app.command("down")
def down(
    prefix: Optional[str] = typer.Option(
        None, "--prefix", help="The lab's prefix (lab.prefix in the plan); default: the one lab of yours that is up."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
    all_: bool = typer.Option(False, "--all", help="Also remove anything else carrying the prefix (after a crash)."),
) -> None:
    """Tear the lab down completely, from its record (and with --all, by its prefix)."""
    from . import holder
    from .lab import Lab
    from .teardown import down_all

    if prefix is None and workdir is None:
        labs = holder.mine()
        if not labs:
            raise ProtolabError("lab down: no lab of yours is recorded as up; give --prefix (and --workdir) "
                                "to name one, with --all to sweep leftovers")
        if len(labs) > 1:
            raise ProtolabError("lab down: several labs of yours are up (prefixes "
                                + ", ".join(h.prefix for h in labs) + "); give --prefix")
        prefix, workdir = labs[0].prefix, Path(labs[0].workdir)
        typer.echo(f"tearing down lab '{prefix}' in {workdir} (brought up by PID {labs[0].pid})")
    prefix = prefix or "pl"
    wd = _workdir(workdir, prefix)
    removed: list[str] = []
    if (wd / "lab.json").exists():
        removed += Lab.from_record(wd).down()
    elif not all_:
        # sweeping a prefix removes every namespace carrying it: suggested only for one protolab made
        hint = f" (use --all to sweep leftovers of prefix '{prefix}')" if holder.made(prefix) else ""
        typer.echo(f"no lab is up in {wd}; nothing to remove{hint}")
        return
    if all_:
        removed += down_all(prefix, workdirs=[wd])
        gone = holder.read(prefix)
        if gone is not None and not gone.live():
            holder.release(gone)
    typer.echo("\n".join(f"removed {r}" for r in removed) if removed else "nothing to remove")
