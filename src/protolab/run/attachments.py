"""A run's attached targets (plan.attach) on its load hosts: each attached before its configuration is first
used (prepared, initialised or measured) and kept until the testbed goes down — after the last cell, after a
failure, and on SIGINT/SIGTERM/SIGHUP (the session's teardown). A run killed outright (SIGKILL)
leaves the list of what it attached in a root-only file under /run/protolab/attached, named by the run's own key
(its manifest's run id and start: a run directory moved elsewhere is still the same run); `protolab resume` of that
run detaches those first, then attaches afresh; `protolab detach` of that run detaches them and stops there. Each
holds the run directory (RunDir.hold), so neither detaches under a session of the run still going.
(A reboot ends them all: node.startup is manual, nothing is in fstab, NVMe/TCP connects do not persist — and /run
is emptied with them.)

Every host of the plan that a load point uses attaches the configuration's target (this machine once, when the
plan has no [[hosts]]). Two targets that name the same storage (an IQN at one portal with 1 and with 4 sessions)
take turns: the one attached is detached before the other is attached. Stream *s* of a host uses the host's
device *s* modulo their number (one per iSCSI session, as the lab's kernel paths do). Before each window, and
before protolab's own writes, `check` runs one small script per host that uses the configuration's target: its
devices still the disks attached, its NFS data file still a plain file on the run's nosymfollow mount.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..engine.targets import Access
from ..errors import ProtolabError, ToolError
from ..plan.model import Configuration, LoadHost, Plan, TargetSpec
from ..proc import Runner
from ..results.files import write_json
from ..results.rundir import RunDir
from ..trust import private_dir
from .attaching import AlreadyAttached, Attached, Attacher, same_storage
from .hostshell import HostShell
from .progress import Progress

STATE_DIR = "attached"


def run_key(run_path: Path) -> str:
    """The run's own name for what it attaches (its state file, iSCSI iface, NFS mount points): a hash of the
    manifest's run id and start time, which move with the run directory; its name when the manifest says neither."""
    try:
        m = RunDir(run_path).manifest()
        rid, started = m.run_id or run_path.name, m.started or ""
    except (ProtolabError, OSError, ValueError):
        rid, started = run_path.name, ""
    return hashlib.sha256(f"{rid}|{started}".encode()).hexdigest()[:16]


def target_key(c: Configuration) -> str:
    """The name an attached target goes by: its [targets] name, or the configuration's for an inline target."""
    return c.target if isinstance(c.target, str) else c.name


def hosts_of(plan: Plan) -> list[LoadHost]:
    """The hosts that attach: the plan's hosts a load point uses, or this machine."""
    if not plan.hosts:
        return [LoadHost(name="this-machine")]
    return plan.hosts[:max(lp.hosts for lp in plan.load_points)]


def attached_targets(plan: Plan) -> dict[str, TargetSpec]:
    """The attached targets the configurations use, by name, in the plan's order."""
    out: dict[str, TargetSpec] = {}
    for c in plan.configurations:
        t = plan.target_of(c)
        if t.attach is not None:
            out.setdefault(target_key(c), t)
    return out


@dataclass
class Attachments:
    """Attach every attached target on every host that uses it (`up`), detach them all (`down`)."""

    plan: Plan
    runner: Runner
    progress: Progress
    netns: str | None = None  # where ssh runs from (tests reach hosts in lab namespaces)
    done: dict[tuple[int, str], Attached] = field(default_factory=dict)
    history: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)  # each attach's latest record
    on_attached: Callable[[list[dict[str, Any]]], None] | None = None  # told each time one is attached
    listed: dict[tuple[int, str], tuple[str, ...] | None] = field(default_factory=dict)  # the state file's list
    _attacher: Attacher | None = None
    _state: Path | None = None

    @property
    def wanted(self) -> bool:
        return bool(attached_targets(self.plan))

    def up(self, run_path: Path) -> int:
        """Ready to attach for the run at ``run_path``, after detaching what a killed session of this run left
        (how many were listed). The caller holds the run directory (RunDir.hold)."""
        key = run_key(run_path)
        self._state = private_dir(STATE_DIR) / f"{key}.json"
        self.listed = self._read_state()
        self._attacher = Attacher(self.runner, key, netns=self.netns)
        old = self._state.with_name(f"{hashlib.sha256(str(run_path.resolve()).encode()).hexdigest()[:16]}.json")
        if old.exists():  # an older protolab's list, by the run directory's path: its iface and NVMe controller
            # names are not this run's alone, so it is said, not acted on
            self.progress.note(f"{old} lists what an older protolab attached for this run: detach it by hand (iSCSI "
                               "iface 'protolab', NVMe controllers by name, NFS mounts under /run/protolab-attach), "
                               "then remove that file")
        left = len(self.listed)
        if self.listed:
            self.progress.note(f"detaching what an earlier session of this run left attached ({left})")
            self._detach(list(self.listed))
        return left

    def ensure(self, c: Configuration) -> None:
        """``c``'s target attached on every host that uses it (nothing to do when it is). A target attached for
        another configuration that names the same storage (the same IQN, the same NQN, the same export) is
        detached first: a host holds one attach of it at a time."""
        t, key, hosts = self.plan.target_of(c), target_key(c), hosts_of(self.plan)
        if t.attach is None or self._attacher is None or all((h, key) in self.done for h in range(len(hosts))):
            return  # every stream of every cell asks: attached already is the common case
        targets = attached_targets(self.plan)
        for h, host in enumerate(hosts):
            if (h, key) in self.done:
                continue
            clash = [(g, k) for g, k in self.done if g == h and same_storage(targets[k].attach, t.attach)]
            if clash:
                self._detach(clash)
            self._list((h, key), None)  # before it is attached: a kill leaves it listed
            self.progress.note(f"attaching {key} on {host.name}: {t.attach.describe()}")
            try:
                self.done[(h, key)] = self._attacher.attach(HostShell.of(host), key, t.attach,
                                                            allow_overwrite=t.allow_overwrite)
            except AlreadyAttached:
                self._list((h, key), None, drop=True)  # the host's own: never to be detached by protolab
                raise
            self._list((h, key), self.done[(h, key)].ids)
            self.history[(h, key)] = self.done[(h, key)].record()
            if self.on_attached is not None:
                self.on_attached(list(self.history.values()))

    def down(self) -> None:
        """Detach everything this run has listed as attached (each, whatever the others do); ToolError naming
        every host that could not, with the command to run there. The list goes once it is empty."""
        if self._attacher is not None:
            self._detach(list(self.listed))
            if not self.listed:
                self._tidy()

    def _detach(self, pairs: list[tuple[int, str]]) -> None:
        """Detach ``pairs`` (each tried); those detached leave the list. ToolError, one line, for the rest."""
        assert self._attacher is not None
        hosts, targets = hosts_of(self.plan), attached_targets(self.plan)
        failed = []
        for h, key in pairs:
            attach = targets[key].attach if key in targets else None
            if h >= len(hosts) or attach is None:
                failed.append(f"target {key} on host {h + 1}: listed as attached but not in this plan; detach it "
                              "there by hand")
                continue
            self.progress.note(f"detaching {key} from {hosts[h].name}")
            try:
                for note in self._attacher.detach(HostShell.of(hosts[h]), key, attach, self.listed.get((h, key))):
                    self.progress.note(note)  # what is not this run's any more, left alone
            except ProtolabError as e:
                failed.append(str(e))
                continue
            self.done.pop((h, key), None)
            self._list((h, key), None, drop=True)
        if failed:
            raise ToolError("; ".join(failed))

    def _list(self, pair: tuple[int, str], ids: tuple[str, ...] | None, drop: bool = False) -> None:
        """Keep the state file in step: ``pair`` listed (with the ids its detach needs) or dropped."""
        assert self._state is not None
        if drop:
            self.listed.pop(pair, None)
        else:
            self.listed[pair] = ids
        if self.listed:
            write_json(self._state, [[h, k, list(i) if i is not None else None] for (h, k), i in self.listed.items()])
        else:
            self._state.unlink(missing_ok=True)
            self._tidy()

    def _tidy(self) -> None:
        """With nothing of any run listed, no folder is left behind in /run/protolab."""
        assert self._state is not None
        if self._state.parent.name == STATE_DIR:
            try:
                self._state.parent.rmdir()
            except OSError:
                pass  # another run's list is there

    def _read_state(self) -> dict[tuple[int, str], tuple[str, ...] | None]:
        """What this run's earlier session listed as attached (a file only root can write)."""
        assert self._state is not None
        try:
            fd = os.open(self._state, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        with os.fdopen(fd) as f:
            try:
                return {(int(e[0]), str(e[1])): (tuple(map(str, e[2])) if len(e) > 2 and e[2] is not None else None)
                        for e in json.load(f)}  # [host, target] (e33427f) or [host, target, ids]
            except (ValueError, TypeError):
                return {}

    def check(self, c: Configuration) -> None:
        """Before a window of ``c`` (or protolab's own writes to its data): on each host that has ``c``'s target
        attached, one script checks it is still what was attached; ToolError in one line when it is not."""
        if self._attacher is None or self.plan.target_of(c).attach is None:
            return
        hosts, key, attach = hosts_of(self.plan), target_key(c), self.plan.target_of(c).attach
        for (h, k), attached in self.done.items():
            if k == key:
                self._attacher.check(HostShell.of(hosts[h]), attached, attach)

    def access(self, c: Configuration, host: int, stream: int, size: int) -> Access | None:
        """How stream ``stream`` of host ``host`` reaches ``c``'s attached target (None: not an attached one)."""
        if self.plan.target_of(c).attach is None:
            return None
        self.ensure(c)
        a = self.done[(host if self.plan.hosts else 0, target_key(c))]
        device = a.devices[stream % len(a.devices)]
        opts = {"direct": "1" if c.direct else "0"}
        return Access("remote", c.ioengine or "io_uring", opts, device, size)


def detach_left(plan: Plan, rundir: RunDir, runner: Runner, progress: Progress) -> int:
    """`protolab detach RUN_DIR`: detach what a killed session of the run left listed (how many were), nothing
    else, each tried once; ToolError naming each host that could not, with the command to run there."""
    bed = Attachments(plan, runner, progress)
    with rundir.held():
        n = bed.up(rundir.path)
        if not bed.listed:
            bed._tidy()
        return n
