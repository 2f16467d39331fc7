"""The catalogue on real runs (issue 45's first point): three runs of the demo and one with its link slowed to a
tenth, into one results directory, each a real `protolab run`; then `protolab history lab-demo` lists the four with
their environments, `protolab check` of the slow run against the first exits 1 naming the metric and the
configuration, of a repeat run exits 0, and a deleted catalogue is rebuilt from the run directories.

The plan is the built-in lab-demo's (its name, workload, link and first load point, read from the built-in) cut to
what `check` needs: one of its configurations that crosses the link, `nbd-1500` (also the baseline), 3 repeats (the
fewest a side `check` tests), windows of 0.5 s + 1 s and a small pool. One configuration, not the demo's seven:
every more one is another cell where a repeat's noise could break a rule (the demo's `local`, CPU-bound, broke
`lat_p99_us` in 8 of 56 checks between repeats on this machine at load averages up to 176). The slow run is that
plan with the link's rate a tenth of the demo's (1GbE → 100mbit): the same plan name, fio and device model, so
`check` compares it without --force and says that the link changed. Unlike the demo, the lab's servers and fio run
at the highest CPU weight (`cpu_priority = "high"`, docs/measurement.md): at the machine's default weight, with other
agents' work here (load average 110 on 2 cores), one repeat of a 1GbE run fell to 1,645 IOPS beside 18,101 and
10,811 — below the slowed link's own — and the slowed link's -72 % could not be called.

What must follow, from the wire alone: 4 KiB at 4 in flight over 100 Mbit/s cannot pass more than the wire model's
ceiling for that link (3,754 IOPS), a tenth of 1GbE's and about a ninth of what nbd-1500 did over 1GbE here at the
high CPU weight (31-35 K IOPS, 2026-12-07), so its IOPS fall far past any rule's tolerance and the test calls it
(-88 … -89 %, Holm-corrected p 3e-7 … 2e-3 in three runs).

The repeat's exit 0 is a measurement, and the built-in rules do not promise it on this shared machine: a run-to-run
shift of the machine (other agents' work coming and going), which the three repeats inside each run cannot see, is
called as a change. 8 runs of this plan here (2026-12-07, load average 12-35): 12 of the 56 checks of one against
another exited 1 under the built-in rules (2 of the 7 of a run against the one before), the largest called changes
IOPS -11 %, mean service time +24 %, fio's CPU per I/O +16 %, the server's +17 % (p99: none called); each run's
repeats within 1-3 %. So the repeat is checked by this machine's rules, given as data (`RULES`): each tolerance
about twice the largest change called between those repeats — as a CI job on a shared runner would set its own —
and the slow run by both those and the built-in rules. Not beside the other lab tests (BESIDE in conftest.py).

Time: 4 runs of 3 windows, 11-15 s each with the lab's up and down, plus 8 commands: 63-87 s (2026-12-07, load
average 7-138).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conftest import family_prefix, lab_workdir, run_cli, run_plan
from protolab.analysis.wire import ceiling
from protolab.plan.library import BUILTIN_WORKLOADS, builtin_studies

pytestmark = pytest.mark.lab
PREFIX = family_prefix("h")
DEMO = tomllib.loads(builtin_studies()["lab-demo"])
KEEP = ("nbd-1500",)
PROTOCOL = next(c["target"] for c in DEMO["configurations"] if c["name"] == KEEP[0]).removeprefix("lab:")
RATE, SLOW = DEMO["lab"]["link"]["rate"], "100mbit"
#: this machine's acceptance rules (see the module's text: about twice the largest change called between repeats)
RULES = ("iops >= -25 %", "mbps >= -25 %", "lat_mean_us <= +50 %", "lat_p99_us <= +100 %",
         "cpu_us_per_io_loadgen <= +35 %", "cpu_us_per_io_server <= +35 %")


def plan(rate: str) -> str:
    """lab-demo's plan, cut short (see the module's text), its link at ``rate``."""
    load = DEMO["load_points"][0]
    configs = [c for c in DEMO["configurations"] if c["name"] in KEEP]
    assert [c["name"] for c in configs] == list(KEEP) and not any("link" in c for c in configs)
    return f"""
name = "{DEMO['name']}"
baseline = "{KEEP[0]}"
workloads = {json.dumps(DEMO['workloads'])}
[lab]
prefix = "{PREFIX}"
hosts = 1
pool_size = "512M"
export_size = "64M"
[lab.link]
rate = "{rate}"
mtu = {DEMO['lab']['link']['mtu']}
""" + "".join(f'[[configurations]]\nname = "{c["name"]}"\ntarget = "{c["target"]}"\n' for c in configs) + f"""
[[load_points]]
streams = {load['streams']}
oio = {load['oio']}
[method]
warmup = "0.5s"
duration = "1s"
repeats = 3
cpu_priority = "high"
"""


@pytest.fixture
def workdir(request):
    yield from lab_workdir(PREFIX, f"routine-{request.node.name[:30]}")


def history(results: Path, *args: str):
    p = run_cli("history", "lab-demo", "--results", results, "--no-page", *args, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def test_history_and_check_over_three_demo_runs_and_a_slowed_link(workdir, tmp_path):
    first, second, third = (run_plan(plan(RATE), workdir, tmp_path, "demo") for _ in range(3))
    slow = run_plan(plan(SLOW), workdir, tmp_path, "slow")
    results = tmp_path / "r"
    runs = [first.name, second.name, third.name, slow.name]

    # history: the four, oldest first, each with its environment; the slow one's link changed from the run before
    p = history(results, "--json")
    assert p.stderr.strip() == f"{results}: catalogue missing: built from 4 run directories"
    h = json.loads(p.stdout)
    assert [r["run"] for r in h["runs"]] == runs and {r["status"] for r in h["runs"]} == {"complete"}
    env = [r["environment"] for r in h["runs"]]
    assert [e["link"] for e in env] == [f"{RATE} MTU 1500"] * 3 + [f"{SLOW} MTU 1500"]
    for e in env:
        assert e["plan"] == "lab-demo" and e["kernel"] and e["fio"] and e["host"] and e["device"]
        assert e["hosts"] == "1 lab host(s)"
    assert [r["environment_changed"] for r in h["runs"]] == [[], [], [], ["link"]]
    assert {(ln["configuration"], len(ln["runs"])) for ln in h["lines"]} == {(c, 4) for c in KEEP}
    text = history(results).stdout
    assert "lab-demo: 4 run(s), oldest first" in text
    assert all(r in text for r in runs) and f"link {SLOW} MTU 1500" in text

    # check: the slow run against the first breaks the IOPS rule at nbd-1500 (exit 1), and says the link changed,
    # by the built-in rules and by this machine's
    rules = tmp_path / "rules.toml"
    rules.write_text(f"rules = {json.dumps(list(RULES))}\n")
    for given, iops_rule in (((), "iops >= -5 %"), (("--rules", rules), RULES[0])):
        p = run_cli("check", slow, "--against", first, *given, timeout=120)
        assert p.returncode == 1, p.stdout + p.stderr
        out = p.stdout
        assert out.splitlines()[0] == f"environment changed from the baseline: link ({SLOW} MTU 1500 against " \
            f"{RATE} MTU 1500)"
        violated = [ln for ln in out.splitlines() if ln.startswith("violated: ")]
        assert any(ln.startswith(f"violated: {iops_rule} — configuration nbd-1500, workload tr3808-4k, load ")
                   and " IOPS -" in ln and "called lower" in ln for ln in violated), out
    c = json.loads(run_cli("check", slow, "--against", first, "--json", timeout=120).stdout)
    [iops] = [o for o in c["outcomes"] if o["rule"] == "iops >= -5 %" and o["configuration"] == "nbd-1500"]
    # the slow link's ceiling for the demo's workload (its busier direction); the link's tc charges each packet
    # handed to it one frame's wire overhead, and with offloads on one packet is several frames: at most what the
    # rate carries of the counted bytes (headers, no preamble or gap) passes
    w = BUILTIN_WORKLOADS[DEMO["workloads"][0]]
    wire = ceiling(PROTOCOL, link_bps=SLOW, mtu=DEMO["lab"]["link"]["mtu"], block_size=w.block_size,
                   read_pct=w.read_pct, oio=DEMO["load_points"][0]["oio"])
    cost = wire.wire_cost
    most = wire.iops * max(cost.bytes_to_host, cost.bytes_to_storage) / max(cost.counted_bytes_to_host,
                                                                             cost.counted_bytes_to_storage)
    print(f"nbd-1500 IOPS: {iops['median_baseline']:.0f} over {RATE}, {iops['median_run']:.0f} over {SLOW} (wire "
          f"ceiling {wire.iops:.0f}, counted {most:.0f}), {iops['change_pct']:+.1f} % [{iops['ci_low_pct']:+.1f}, "
          f"{iops['ci_high_pct']:+.1f}], p {iops['p_adjusted']:.3g}")
    assert iops["status"] == "violated" and iops["median_run"] <= most < iops["median_baseline"]

    # a repeat of the same plan on the same machine: every one of this machine's rules holds (and what the built-in
    # rules said of it, for the log)
    print(run_cli("check", second, "--against", first, timeout=120).stdout)
    p = run_cli("check", second, "--against", first, "--rules", rules, timeout=120)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "environment changed" not in p.stdout and f" 0 of 6 rule checks violated ({rules})" in p.stdout

    # a deleted catalogue is rebuilt from the run directories, the same four
    (results / "catalogue.sqlite").unlink()
    p = history(results, "--json")
    assert p.stderr.strip() == f"{results}: catalogue missing: built from 4 run directories"
    assert json.loads(p.stdout)["runs"] == h["runs"] and (results / "catalogue.sqlite").is_file()
