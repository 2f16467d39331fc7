"""Page caches dropped before each cell (plan.drop_caches, `[method] drop_caches`): on the load hosts the cell uses and
on the storage servers the plan names, through each one's shell (run.hostshell: this machine, or ssh).

The script is one fixed text with no plan value in it: it reads /proc/meminfo's Cached, writes back dirty pages
(`sync`), drops the clean ones (`echo 3 > /proc/sys/vm/drop_caches`) and reads Cached again; both figures go into
the cell's record (`CellRecord.caches_dropped`), so a reader sees what each drop freed. A host that refuses (not
root there) or does not answer stops the run before the cell's window, in one line naming it.
"""

from __future__ import annotations

import re

from ..conventions import digits
from ..errors import ToolError
from ..plan.expand import Cell
from ..plan.hosts import LoadHost
from ..plan.model import Plan
from ..proc import Runner
from ..results.records import CacheDrop
from .hostshell import HostShell

TIMEOUT_S = 300.0  # sync writes back every dirty page of the host first
#: the name this machine goes by when the plan has no [[hosts]] (as run.attachments names it)
THIS_MACHINE = "this-machine"

SCRIPT = """PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cached() { awk '$1 == "Cached:" { print $2 }' /proc/meminfo; }
before=$(cached)
sync
{ echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null || { echo "error cannot write /proc/sys/vm/drop_caches as \
$(id -un) (only root may drop the page cache)"; exit 4; }
echo "cached $before $(cached)"
"""


def shells(plan: Plan, cell: Cell) -> list[HostShell]:
    """Where the caches are dropped before ``cell``: each load host it uses (one shell per machine: several
    'local' hosts are this machine once), then each named server; [] when the plan does not ask."""
    d = plan.method.drop_caches
    if d is None:
        return []
    out: list[HostShell] = []
    if d.hosts:
        hosts = plan.hosts[:cell.load_point.hosts] or [LoadHost(name=THIS_MACHINE)]
        for h in hosts:
            shell = HostShell.of(h)
            if all(shell.argv != s.argv for s in out):
                out.append(shell)
    return out + [HostShell.of(s.host()) for s in d.servers]


def _kib(text: str) -> int | None:
    return int(text) if digits(text) else None


def drop_on(shell: HostShell, runner: Runner) -> CacheDrop:
    """Drop ``shell``'s host's page cache; what /proc/meminfo said of it. ToolError (one line) when it cannot."""
    done = shell.run(runner, SCRIPT, timeout=TIMEOUT_S)
    said = re.search(r"^cached (\S+) (\S+)$", done.stdout, re.M)
    if done.returncode != 0 or said is None:
        error = re.search(r"^error (.*)$", done.stdout, re.M)
        why = error.group(1) if error else done.one_line_error()
        raise ToolError(f"host {shell.name}: dropping the page cache failed: {why}; the run stops before the cell's "
                        "window (or remove method.drop_caches)")
    return CacheDrop(host=shell.name, cached_kib_before=_kib(said.group(1)), cached_kib_after=_kib(said.group(2)))


def drop_caches(plan: Plan, cell: Cell, runner: Runner) -> list[CacheDrop]:
    """Before ``cell``'s window: every page cache the plan asks dropped, in order, and what each drop did."""
    return [drop_on(s, runner) for s in shells(plan, cell)]
