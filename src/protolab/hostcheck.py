"""`protolab doctor --hosts PLAN`: what each of a plan's load hosts has for its run — reached (ssh), fio and its
version, the initiator tools and kernel modules each attached target needs, the MTU of the interface that
routes to each attach address.

One fixed shell script does the looking, on this machine (``sh -c``) or over the host's ssh connection; every
value in it is protolab's own (tool and module names) or a plan value already checked by plan.attach and
quoted here, so nothing a plan says can become a command.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from .doctor import Check
from .errors import ProtolabError
from .plan.model import LoadHost, Plan
from .proc import Runner
from .run.hostinitiators import HOST_INITIATORS
from .run.hostshell import HostShell, Unreachable

SSH_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class HostReport:
    """One host's checks, under a title that says how it is reached (``required``: whether they fail the doctor)."""

    title: str
    checks: list[Check]
    required: bool = True


def attach_addresses(plan: Plan) -> dict[str, set[str]]:
    """The protocols attached at each address by the targets the configurations use ('10.1.2.3' → {'iscsi'})."""
    out: dict[str, set[str]] = {}
    for c in plan.configurations:
        a = plan.target_of(c).attach
        if a is not None:
            out.setdefault(a.address, set()).add(a.protocol)
    return out


def script(fio: str, protocols: set[str], addresses: list[str]) -> str:
    """The shell script that prints one line per finding: 'fio VERSION', 'tool NAME PATH', 'module NAME yes|no',
    'mtu ADDRESS DEVICE MTU' ('-' for what is not there)."""
    tools = " ".join(HOST_INITIATORS[p].tool for p in sorted(protocols))
    modules = " ".join(HOST_INITIATORS[p].module for p in sorted(protocols))
    q = shlex.quote
    return "\n".join([
        'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"',
        f'v=$({q(fio)} --version 2>/dev/null | head -1); echo "fio ${{v:--}}"',
        f'for t in {tools}; do p=$(command -v "$t" 2>/dev/null); echo "tool $t ${{p:--}}"; done' if tools else ":",
        f'for m in {modules}; do if [ -d "/sys/module/$m" ] || modinfo "$m" >/dev/null 2>&1; then '
        'echo "module $m yes"; else echo "module $m no"; fi; done' if modules else ":",
        f"for a in {' '.join(q(a) for a in addresses)}; do "
        """ip4=$(getent ahostsv4 "$a" 2>/dev/null | awk 'NR==1{print $1}'); """
        """d=$(ip -o route get "${ip4:-$a}" 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'); """
        """m=$(cat "/sys/class/net/${d:-none}/mtu" 2>/dev/null); echo "mtu $a ${d:--} ${m:--}"; done"""
        if addresses else ":",
    ])


def checks_from(output: str, protocols: set[str], addresses: dict[str, set[str]], where: str) -> list[Check]:
    """The findings of `script`'s output as checks, each with what to do on ``where`` when it is missing."""
    seen = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        key, _, value = rest.partition(" ") if kind != "fio" else ("", "", rest)
        seen[(kind, key)] = value.strip()
    fio = seen.get(("fio", ""), "-")
    out = [Check("fio", fio not in ("", "-"), fio if fio not in ("", "-") else "not found",
                 f"install fio on {where}, or give the host's fio = \"/path/to/fio\" in the plan")]
    for p in sorted(protocols):
        i = HOST_INITIATORS[p]
        tool, module = i.tool, i.module
        path = seen.get(("tool", tool), "-")
        out.append(Check(f"{p}: {tool}", path not in ("", "-"), path if path not in ("", "-") else "not found",
                         f"install {tool} on {where} (Debian: {i.package})"))
        has = seen.get(("module", module)) == "yes"
        out.append(Check(f"{p}: module {module}", has, "loaded or loadable" if has else "not in this kernel",
                         f"a kernel with {module} on {where} (modprobe {module})"))
    for address, used in addresses.items():
        dev, _, mtu = seen.get(("mtu", address), "- -").partition(" ")
        ok = dev not in ("", "-") and mtu.strip().isdigit()
        out.append(Check(f"{'+'.join(sorted(used))}: route to {address}", ok,
                         f"via {dev}, MTU {mtu}" if ok else "no route",
                         f"give {where} a route to {address}"))
    return out


def _local_fio(given: str | None) -> tuple[str | None, Check | None]:
    """This machine's fio (``given``, else the one protolab would run), or the check that says why there is none."""
    if given:
        return given, None
    from .engine.fio import find_fio

    try:
        path = find_fio()[0]
    except ProtolabError as e:
        return None, Check("fio", False, str(e), "set PROTOLAB_FIO to a fio that root owns, or run 'make deps'")
    return path or "fio", None


def check_hosts(plan: Plan, runner: Runner, *, netns: str | None = None,
                local_fio: str | None = None) -> list[HostReport]:
    """Each of the plan's hosts checked (this machine when the plan names none); ``netns`` is where ssh runs from
    (tests reach hosts in lab namespaces)."""
    addresses = attach_addresses(plan)
    protocols = set().union(*addresses.values()) if addresses else set()
    reports = []
    for host in plan.hosts or [LoadHost(name="this-machine")]:
        if host.agent.startswith("fio://"):
            reports.append(HostReport(f"{host.name} ({host.agent})", [Check(
                "commands", False, "a fio:// host runs no command for protolab: nothing checked",
                "use agent = \"ssh://…\" to have protolab check (and, later, attach on) this host")], required=False))
            continue
        shell = HostShell.of(host)
        title = f"{host.name} ({'this machine' if not shell.ssh else host.agent})"
        if host.agent == "local":
            fio, refused = _local_fio(local_fio)
            if refused is not None:
                reports.append(HostReport(title, [refused]))
                continue
        else:
            fio = host.fio
        where = shell.where
        try:
            done = shell.run(runner, script(str(fio), protocols, list(addresses)), timeout=SSH_TIMEOUT_S, netns=netns)
        except Unreachable as e:  # ssh missing, refused, or no answer in time: the one line without the script
            reports.append(HostReport(title, [Check("reached", False, e.why, f"check '{shell.reach_command()}' "
                                                                             "(keys, host name, port)")]))
            continue
        reached = [Check("reached", True, "over ssh" if host.agent != "local" else "this machine")]
        reports.append(HostReport(title, reached + checks_from(done.stdout, protocols, addresses, where)))
    return reports
