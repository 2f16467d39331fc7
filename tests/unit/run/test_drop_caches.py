"""Page caches dropped before each cell (run.caches) with a fake runner: where the script runs (each load host the
cell uses, this machine once, the named servers over ssh), what a refusal becomes, and that a session stores each
drop in the cell's record and the report's method section says it. The real drop: tests/e2e/test_drop_caches.py."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from fakes import FakeFio, FakeTestbed
from protolab.errors import ToolError
from protolab.plan.expand import expand
from protolab.plan.load import load_plan_text
from protolab.proc import Completed, FakeRunner
from protolab.report import tables
from protolab.report.sections.method_section import MethodSection
from protolab.results.rundir import RunDir
from protolab.run import Study
from protolab.run.caches import SCRIPT, drop_caches, shells

PLAN = """name = "dc"
baseline = "a"
workloads = ["tr3808-4k"]
[targets.t]
url = "{dir}/data.dat"
[[configurations]]
name = "a"
target = "t"
[[load_points]]
streams = 1
oio = 1
{load}
[method]
warmup = 0
duration = "1s"
repeats = 2
prepare = false
drop_caches = {drop}
{hosts}"""
HOSTS = """[[hosts]]
name = "h1"
agent = "local"
[[hosts]]
name = "h2"
agent = "local"
[[hosts]]
name = "esx3"
agent = "ssh://root@esx3:2222"
"""
FILER = '{ servers = [{ name = "filer", ssh = "ssh://root@10.1.2.4", ssh_options = ["-p", "2200"] }] }'


def _plan(tmp_path, drop: str = "true", hosts: str = "", load: str = ""):
    return load_plan_text(PLAN.format(dir=tmp_path, drop=drop, hosts=hosts, load=load))


def _said(before: int, after: int):
    return lambda argv: Completed(tuple(argv), 0, f"cached {before} {after}\n", "")


def test_the_script_is_valid_sh_and_holds_no_plan_value():
    assert subprocess.run(["sh", "-n", "-c", SCRIPT], capture_output=True, timeout=10).returncode == 0
    assert "sync" in SCRIPT and "echo 3 > /proc/sys/vm/drop_caches" in SCRIPT and "{" not in SCRIPT.split("}")[-1]


def test_a_cell_drops_on_each_machine_it_uses_once_then_on_the_servers(tmp_path):
    plan = _plan(tmp_path, FILER, HOSTS, "[[load_points]]\nhosts = 3\nstreams = 1\noio = 1")
    first, wide = expand(plan)[0], expand(plan)[-1]
    # one host: h1 (this machine); three: h1 and h2 are both this machine (once), esx3 over ssh; then the filer
    assert [s.name for s in shells(plan, first)] == ["h1", "filer"]
    assert [(s.name, s.ssh) for s in shells(plan, wide)] == [("h1", False), ("esx3", True), ("filer", True)]
    runner = FakeRunner({("sh", "-c"): _said(2_000_000, 500_000), ("ssh",): _said(9_000_000, 1_000_000)})
    drops = drop_caches(plan, wide, runner)
    assert [(d.host, d.cached_kib_before, d.cached_kib_after) for d in drops] == [
        ("h1", 2_000_000, 500_000), ("esx3", 9_000_000, 1_000_000), ("filer", 9_000_000, 1_000_000)]
    argv = [a for a, _ in runner.calls]
    assert argv[0] == ("sh", "-c", SCRIPT)
    assert argv[1][:2] == ("ssh", "-n") and argv[1][-2] == "root@esx3" and "2222" in argv[1]
    assert argv[2][-2] == "root@10.1.2.4" and argv[2][argv[2].index("-p") + 1] == "2200"
    assert argv[2][-1] == f"sh -c {shlex.quote(SCRIPT)}"  # the fixed script, quoted whole for the remote shell


def test_without_hosts_it_is_this_machine_and_servers_alone_skip_the_hosts(tmp_path):
    plan = _plan(tmp_path)
    assert [(s.name, s.argv) for s in shells(plan, expand(plan)[0])] == [("this-machine", ("sh", "-c"))]
    only = _plan(tmp_path, '{ hosts = false, servers = [{ name = "filer", ssh = "ssh://root@filer" }] }')
    assert [s.name for s in shells(only, expand(only)[0])] == ["filer"]
    assert shells(_plan(tmp_path, "false"), expand(plan)[0]) == []


@pytest.mark.parametrize("answer, said", [
    (Completed((), 4, "error cannot write /proc/sys/vm/drop_caches as bench (only root may drop the page cache)\n",
               ""), "host filer: dropping the page cache failed: cannot write /proc/sys/vm/drop_caches as bench"),
    (Completed((), 255, "", "ssh: connect to host 10.1.2.4 port 22: Connection refused"),
     "host filer: ssh failed (ssh: connect to host 10.1.2.4 port 22: Connection refused)"),
    (Completed((), 0, "nothing\n", ""), "host filer: dropping the page cache failed: "),
])
def test_a_host_that_refuses_or_does_not_answer_stops_the_run_in_one_line(tmp_path, answer, said):
    plan = _plan(tmp_path, '{ hosts = false, servers = [{ name = "filer", ssh = "ssh://root@10.1.2.4" }] }')
    with pytest.raises(ToolError) as e:
        drop_caches(plan, expand(plan)[0], FakeRunner({("ssh",): answer}))
    assert str(e.value).startswith(said) and "\n" not in str(e.value)


def test_a_session_drops_before_every_window_and_its_records_and_report_say_so(tmp_path):
    plan = _plan(tmp_path)
    text = PLAN.format(dir=tmp_path, drop="true", hosts="", load="")
    events: list = []
    runner = FakeRunner({("sh", "-c"): lambda argv: (events.append("drop"),
                                                     _said(3_000_000 + len(events), 1_000_000)(argv))[1]})
    fio = FakeFio(events)
    bed = FakeTestbed(plan, fio, events)
    bed.runner = runner
    rd = Study(plan, text, "dc.toml", results_root=tmp_path / "r", fio=fio, testbed=bed).run()
    # a drop right before each of the two windows (after the telemetry window's start: the telemetry's own)
    assert [e for e in events if e in ("drop", "up", "down") or str(e).startswith("measure")] == [
        "up", "drop", "measure tr3808-4k__a__h1s1q1__r1", "drop", "measure tr3808-4k__a__h1s1q1__r2", "down"]
    records = RunDir.open(rd.path, write=False).records()
    assert [[(d.host, d.cached_kib_after) for d in r.caches_dropped] for r in records] == [
        [("this-machine", 1_000_000)]] * 2
    assert [r.caches_dropped[0].cached_kib_before for r in records] == [3_000_002, 3_000_005]
    model = MethodSection().build(tables.build(rd.manifest(), records))
    assert model.caches == ("Page caches dropped before 2 of 2 windows (sync; echo 3 > /proc/sys/vm/drop_caches), "
                            "/proc/meminfo's Cached before → after each drop, median: this-machine, Cached 2,930 → "
                            "977 MiB.")
    assert "page caches dropped before each cell (the load hosts)" in model.text


def test_a_plan_that_asks_but_whose_records_hold_no_drop_is_said_so(tmp_path, setup):
    rd = setup([]).run()  # tests/fakes.PLAN: no drop asked, none recorded: nothing said
    records = rd.records()
    assert MethodSection().build(tables.build(rd.manifest(), records)).caches == ""
    m = rd.manifest()
    m = m.model_copy(update={"plan": {**m.plan, "method": {**m.plan["method"], "drop_caches": {"hosts": True,
                                                                                               "servers": []}}}})
    said = MethodSection().build(tables.build(m, records)).caches
    assert said == ("The plan asks for page caches dropped before each cell (the load hosts), but no window records "
                    "a drop (measured by a protolab that did not drop them).")
