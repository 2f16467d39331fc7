"""A machine's counters as files and scripted answers, for telemetry tests: a /proc tree (machine CPU,
softirq per core, processes with their threads and children), a cgroup v2 tree with the role cgroups
(cpu.stat, cpu.pressure, the weight's harness child), and a runner answering `ip -s -j link` and
`ethtool -k` from the interfaces set here. Every counter is set by the test; nothing is read from the
real machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from protolab.proc import Completed, FakeRunner
from protolab.telemetry.cgroups import ROLES, RoleCgroups

Thread = tuple[str, int, int]  # comm, utime ticks, stime ticks


def stat_line(pid: int, comm: str, utime: int, stime: int, cutime: int = 0, cstime: int = 0) -> str:
    """A /proc/PID/stat line: pid (comm) state ppid … field 14 utime, 15 stime, 16 cutime, 17 cstime."""
    return f"{pid} ({comm}) S 1 " + " ".join(["0"] * 9) + f" {utime} {stime} {cutime} {cstime} 20 0 1 0\n"


class FakeMachine:
    """Counters a test sets, in the places and formats the kernel and the tools give them."""

    def __init__(self, root: Path, group: str = "unit"):
        self.proc = root / "proc"
        self.cgroup_root = root / "cgroup"
        self.proc.mkdir(parents=True)
        self.cgroup_root.mkdir(parents=True)
        (self.cgroup_root / "cgroup.subtree_control").write_text("cpu memory\n")  # the weight can be set (v2)
        self.group = group
        self.now = 0.0
        self.links: dict[str, dict[str, tuple[int, int, int, int]]] = {}  # netns → ifname → rx/tx bytes, packets
        self.offload_state: dict[str, str | None] = {}  # ifname → 'on' | 'off' | None (ethtool fails)
        self.runner = FakeRunner(answers={("ip",): self._ip, ("ethtool", "-k"): self._ethtool})

    # -- clock ---------------------------------------------------------------------------------------

    def clock(self) -> float:
        return self.now

    # -- /proc ---------------------------------------------------------------------------------------

    def stat(self, cpu: tuple[int, ...], softirq: tuple[int, ...]) -> None:
        """/proc/stat: the machine's 'cpu' line (user nice system idle iowait irq softirq steal ticks) and
        one 'cpuN' line per core with its softirq ticks."""
        lines = ["cpu  " + " ".join(map(str, cpu)) + " 0 0"]
        lines += [f"cpu{i} 1 0 1 10 0 0 {n} 0 0 0" for i, n in enumerate(softirq)]
        (self.proc / "stat").write_text("\n".join(lines) + "\nintr 0\nctxt 0\n")

    def process(self, pid: int, threads: dict[int, Thread], children: tuple[int, ...] = (),
                reaped: tuple[int, int] = (0, 0)) -> None:
        """Process ``pid`` with exactly these threads (tid → comm, utime, stime), live children and the
        reaped children's times (cutime, cstime); its own stat sums its threads."""
        self.gone(pid)
        base = self.proc / str(pid)
        for tid, (comm, u, s) in threads.items():
            task = base / "task" / str(tid)
            task.mkdir(parents=True)
            (task / "comm").write_text(comm + "\n")
            (task / "stat").write_text(stat_line(tid, comm, u, s))
            (task / "children").write_text(" ".join(map(str, children)) if tid == pid else "")
        comm = threads[pid][0] if pid in threads else "x"
        (base / "stat").write_text(stat_line(pid, comm, sum(t[1] for t in threads.values()),
                                             sum(t[2] for t in threads.values()), *reaped))

    def gone(self, pid: int) -> None:
        """Process ``pid`` has ended (and been reaped)."""
        shutil.rmtree(self.proc / str(pid), ignore_errors=True)

    # -- role cgroups --------------------------------------------------------------------------------

    def role_cgroups(self) -> RoleCgroups:
        """The role cgroups under this machine's cgroup tree (made if missing)."""
        cg = RoleCgroups(self.group, root=(self.cgroup_root, "v2"))
        cg.create()
        return cg

    def roles(self, usage_usec: dict[str, int], wait_usec: dict[str, int], weighted: bool) -> None:
        """Each role's cpu.stat usage and PSI 'some' total (a role left out has no such file), and whether
        the roles are at the highest weight (the group's harness child exists and cpu.weight is the highest)."""
        group = self.cgroup_root / f"protolab-{self.group}"
        for role in ROLES:
            (group / role).mkdir(parents=True, exist_ok=True)
            for name, values, text in (
                    ("cpu.stat", usage_usec, lambda v: f"usage_usec {v}\nuser_usec {v // 2}\nsystem_usec {v // 2}\n"),
                    ("cpu.pressure", wait_usec, lambda v: f"some avg10=0.00 avg60=0.00 avg300=0.00 total={v}\n"
                                                          f"full avg10=0.00 avg60=0.00 avg300=0.00 total={v // 3}\n")):
                f = group / role / name
                if role in values:
                    f.write_text(text(values[role]))
                elif f.exists():
                    f.unlink()
        harness = group / "harness"
        (group / "cpu.weight").write_text("10000\n")
        if weighted:
            harness.mkdir(exist_ok=True)
        elif harness.exists():
            harness.rmdir()

    # -- interfaces ----------------------------------------------------------------------------------

    def link(self, netns: str, ifname: str, rx_bytes: int, tx_bytes: int, rx_packets: int, tx_packets: int) -> None:
        """Interface ``ifname`` of ``netns`` has carried this much so far."""
        self.links.setdefault(netns, {})[ifname] = (rx_bytes, tx_bytes, rx_packets, tx_packets)

    def _ip(self, argv: list[str]) -> Completed:
        ns = argv[argv.index("-n") + 1] if "-n" in argv else None
        doc = [{"ifname": name, "stats64": {"rx": {"bytes": rb, "packets": rp}, "tx": {"bytes": tb, "packets": tp}}}
               for name, (rb, tb, rp, tp) in self.links.get(ns or "", {}).items()]
        return Completed(tuple(argv), 0, json.dumps(doc), "")

    def _ethtool(self, argv: list[str]) -> Completed:
        state = self.offload_state.get(argv[-1])
        if state is None:
            return Completed(tuple(argv), 1, "", "netlink error: no device matches name")
        text = "".join(f"{f}: {state}\n" for f in ("tcp-segmentation-offload", "generic-segmentation-offload",
                                                   "generic-receive-offload"))
        return Completed(tuple(argv), 0, "Features for x:\n" + text, "")
