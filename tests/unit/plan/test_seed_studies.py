"""The built-in studies (the seeds': tr3808, tr3916-shared, jumbo-vmtn …; and kernel-paths, which has none): each
loads, validates and expands at both scales with the seed's own numbers at full; their lab prefixes are their own;
`protolab plans` lists their seed and runtime at each scale; the report sets each seed finding beside the measured
sentences."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT
from protolab.plan.expand import expand
from protolab.plan.library import builtin_studies
from protolab.plan.load import load_builtin
from protolab.plan.repeats import AdaptiveRepeats
from protolab.plan.topology import LabSpec
from protolab.results.manifest import Manifest, Provenance

# name → (quick cells, full cells); the last factor at quick: the swept values around the chosen point (plan.sweep)
CELLS = {"tr3808": (7 * 2 * 2 * 3 * 2, 11 * 2 * 3 * 3), "tr3916-shared": (5 * 2 * 2 * 3, 5 * 2 * 4 * 3),
         "jumbo-vmtn": (4 * 4 * 1 * 3 * 2, 4 * 4 * 1 * 3),
         "exchange": (4 * 2 * 1 * 3 * 3, 4 * 2 * 1 * 1),
         # fill levels 10, 50, 100 once per configuration and repeat, 25 aged in steps (quick 2, full 84)
         "emc-fill-aging": (2 * 3 * (3 + 2), 2 * 1 * (3 + 84)),
         # no seed: the literature's expectation (NVMe/TCP against iSCSI), tested; 9 paths, 1 or 2 workloads
         "kernel-paths": (10 * 1 * 1 * 3, 10 * 2 * 1 * 3)}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_each_seed_study_loads_and_expands_at_both_scales(name):
    quick, _ = load_builtin(name, "quick")
    full, _ = load_builtin(name, "full")
    assert (len(expand(quick)), len(expand(full))) == CELLS[name]
    assert quick.seed and quick.seed_findings and quick.scale == "quick" and full.scale == "full"
    lab = quick.lab if isinstance(quick.lab, LabSpec) else LabSpec.model_validate(quick.lab)
    assert lab.hosts >= max(lp.hosts for lp in quick.load_points)


def test_full_scales_are_the_seeds_own_numbers():
    tr3808, _ = load_builtin("tr3808", "full")
    assert [(lp.hosts, lp.streams, lp.oio) for lp in tr3808.load_points] == [(8, 4, 4), (8, 12, 4), (8, 20, 4)]
    assert sum(lp.hosts * lp.streams * lp.oio for lp in tr3808.load_points) == 128 + 384 + 640
    m = tr3808.method
    assert (m.warmup, m.duration, m.restore, m.initialise.workload, m.initialise.duration) == \
        (300, 300, True, "tr3808-init", 300)
    assert {w.name for w in tr3808.workloads} == {"tr3808-4k", "tr3808-8k"} and tr3808.baseline == "direct"
    policies = {c.path_policy for c in tr3808.configurations}
    links = {(c.link.get("rate", "1GbE"), c.link.get("mtu", 1500)) for c in tr3808.configurations}
    assert policies == {"fixed", "round-robin"} and links == {("1GbE", 1500), ("1GbE", 9000), ("10GbE", 1500),
                                                             ("10GbE", 9000)}
    shared, _ = load_builtin("tr3916-shared", "full")
    # two data disks per VM: 2 streams of 1 OIO per VM keep the seed's 64 / 128 / 192 / 256 OIO in all
    assert [lp.hosts * lp.streams * lp.oio for lp in shared.load_points] == [64, 128, 192, 256]
    assert (shared.method.warmup, shared.method.duration) == (600, 900)
    assert {w.name for w in shared.workloads} == {"tr3916-4k", "tr3916-8k"}
    jumbo, _ = load_builtin("jumbo-vmtn", "full")
    assert [(lp.hosts, lp.streams, lp.oio) for lp in jumbo.load_points] == [(1, 1, 64)]
    assert (jumbo.method.warmup, jumbo.method.duration) == (120, 300)
    r = jumbo.method.repeats
    assert isinstance(r, AdaptiveRepeats) and (r.min, r.max) == (3, 4) and r.until_agree_pct == 5
    assert {c.link.get("mtu", 1500) for c in jumbo.configurations} == {1500, 9000}
    assert len(jumbo.workloads) == 4


def test_exchange_and_emc_are_the_seeds_own_numbers():
    ex, _ = load_builtin("exchange", "full")
    assert [(lp.hosts, lp.streams) for lp in ex.load_points] == [(1, 8)]
    assert ex.method.duration == 8.5 * 3600 and ex.method.slo is not None and ex.method.slo.p95 == 0.020
    assert {w.name for w in ex.workloads} == {"exchange-heavy", "exchange-double-heavy"}
    lab = LabSpec.model_validate(ex.lab)
    assert (lab.nics_per_host, lab.storage_ports, lab.link.rate) == (4, 4, "1GbE")
    # quick: the rate at which this machine's mean demand uses one link as much as the seed's 3,700 IOPS used 1GbE
    quick = LabSpec.model_validate(load_builtin("exchange", "quick")[0].lab)
    assert (quick.nics_per_host, quick.storage_ports, quick.link.rate) == (4, 4, "1250mbit")
    assert {c.name: c.path_policy for c in ex.configurations if c.name.startswith("iscsi")} == \
        {"iscsi-1x1g": "fixed", "iscsi-4x1g": "round-robin"}
    emc, _ = load_builtin("emc-fill-aging", "full")
    assert emc.fill.levels == [10, 25, 50, 100] and emc.method.interval == 10
    assert (emc.stage.age.duration, emc.stage.age.every, emc.stage.age.at_fill) == (84 * 3600, 3600, 25)
    assert [(lp.streams, lp.oio) for lp in emc.load_points] == [(26, 1)] and [w.name for w in emc.workloads] == \
        ["exchange-2to1"]
    assert LabSpec.model_validate(emc.lab).cow is True
    for scale in ("quick-in-place", "full-in-place"):
        p, _ = load_builtin("emc-fill-aging", scale)
        assert LabSpec.model_validate(p.lab).cow is False


def test_built_in_lab_prefixes_differ_from_each_other_and_the_tests():
    prefixes = {}
    for name, text in builtin_studies().items():
        lab = tomllib.loads(text).get("lab")
        if lab is not None:
            prefixes[name] = lab.get("prefix", "pl")
    assert len(set(prefixes.values())) == len(prefixes), prefixes
    # the lab tests' own prefixes (plt…, and the study tests' pls…) must not be the start of a built-in's
    assert not any(p.startswith(("plt", "pls")) for p in prefixes.values())


def test_plans_lists_seed_and_runtime_at_each_scale():
    p = subprocess.run([sys.executable, "-m", "protolab.cli", "plans"], capture_output=True, text=True, timeout=120,
                       env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    for name in CELLS:
        line = next(ln for ln in p.stdout.splitlines() if ln.startswith(name + " "))
        assert ("seed: S" in line or name == "kernel-paths") and "quick ≈" in line and "full ≈" in line
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("kernel-paths "))
    assert "no seed: the literature's expectation" in line


def test_kernel_paths_sets_nvme_tcp_against_iscsi_at_each_mtu_and_kernel_servers_against_userspace():
    """The kernel-paths study's claims name their reference, a kernel path each (or tgt): the verdicts compare
    like with like (same MTU; the same protocol for LIO against tgt), whatever the baseline."""
    plan, _ = load_builtin("kernel-paths", "quick")
    by = {c.name: c for c in plan.configurations}
    assert plan.hypervisor is not None and plan.baseline == "local" and by["local"].target == "lab:local"
    assert {n: (c.target, c.server) for n, c in by.items() if c.server} == {
        "lio": ("lab:iscsi", "lio"), "lio-9000": ("lab:iscsi", "lio"), "knfsd": ("lab:nfs", "knfsd")}
    pairs = {(f.metrics[0], tuple(c.subjects), c.reference) for f in plan.seed_findings for c in f.claims}
    for metric in ("packets_per_io", "cpu_us_per_io_server"):
        assert {(metric, ("nvme-tcp",), "lio"), (metric, ("nvme-tcp-9000",), "lio-9000")} <= pairs
    assert {("iops", ("lio",), "tgt"), ("iops", ("knfsd",), "ganesha")} <= pairs
    for subject, reference in (("nvme-tcp-9000", "lio-9000"), ("nvme-tcp", "lio")):
        assert by[subject].link.get("mtu", 1500) == by[reference].link.get("mtu", 1500)
    full, _ = load_builtin("kernel-paths", "full")
    assert full.hypervisor.vcpus == 2 and {w.name for w in full.workloads} == {"kp-4k-read", "tr3916-oltp"}


def _records(plan, iops: dict[tuple[str, str], float]):
    """Three repeats per (workload, configuration) at the plan's one load point, IOPS ±0.1 %."""
    from protolab.results.records import CellRecord, CellResult, DirectionResult

    out = []
    for (w, c), v in iops.items():
        for k, x in enumerate((v * 0.999, v, v * 1.001)):
            res = CellResult(iops=x, mbps=x / 100, read=DirectionResult(ios=int(x), iops=x), write=DirectionResult(),
                             lat_mean_us=100.0, percentiles_us={"p99": 300.0}, jobs=1, runtime_s=2.0, errors=0)
            out.append(CellRecord(run_id="r", seq=len(out), cell_id=f"{w}__{c}__0__r{k}", workload=w, configuration=c,
                                  baseline=c == plan.baseline, load_index=0, hosts=1, streams_per_host=1,
                                  oio_per_stream=64, total_oio=64, repeat=k + 1, started="", ended="", result=res,
                                  raw_output="", job_file=""))
    return out


def test_the_report_opens_the_seeds_claims_with_computed_verdicts_in_both_formats():
    from markupsafe import Markup

    from protolab.analysis.bottleneck import Bottleneck
    from protolab.analysis.claims import claim_verdicts, judged_at
    from protolab.plan.coordinates import point_of
    from protolab.report.sections import Page
    from protolab.report.sections.seed_section import SeedSection

    plan, _ = load_builtin("jumbo-vmtn", "quick")

    class Data:  # the fields of ReportData the section reads
        pass

    def section(iops, bottleneck="none"):
        d = Data()
        d.plan, d.manifest, d.trends = plan, Manifest(provenance=Provenance(cpus=2)), {}
        d.alpha, d.noise = 0.05, 0.02
        d.records = _records(plan, iops)
        d.bottlenecks = {(r.workload, point_of(r), r.configuration): Bottleneck(bottleneck, "tgtd", None, None, None)
                         for r in d.records}
        d.claims, d.reach = claim_verdicts(plan, d.records, d.bottlenecks, d.trends), []  # as report.tables builds
        d.judged = judged_at(plan)
        s = SeedSection()
        m = s.build(d)
        return m, "\n".join(s.markdown(m)), str(s.html(m, Page(chart=lambda c: Markup(""))))

    w = [x.name for x in plan.workloads]
    # NFS +2 % from jumbo frames (+7 % on 100 % read), iSCSI −1 %; iSCSI twice NFS on Max Throughput-50%Read: every
    # finding reproduced but vMotion's, which this lab cannot test
    held = {(x, c): 1000.0 * f for x in w for c, f in
            [("iscsi-1500", 2.0), ("iscsi-9000", 1.98), ("nfs-1500", 1.0), ("nfs-9000", 1.02)]}
    held[("vmtn-max-read", "nfs-9000")] = 1070.0
    m, md, html = section(held)
    assert [v.verdict for v in m.verdicts] == ["reproduced"] * 5 + ["not testable here"]
    assert md.count("| **reproduced** |") == 5 and html.count('class="verdict reproduced"') == 5
    assert "## The seed's claims, tested" in md and "<h2>The seed's claims, tested</h2>" in html
    assert ("| NFS test results | For NFS, I'll sum it up as a 0-3% IOPS performance improvement by using jumbo "
            "frames. | IOPS: nfs-* at the larger MTU against the same configuration at the smaller: change +0.0 to "
            "+3.0 %; workloads vmtn-real-life, vmtn-max-50read, vmtn-random-8k | **reproduced** | change +2.0 % "
            "(intervals +1.8 to +2.2 %) over 3 comparisons: 3 reproduced | 2.0 % |") in md
    assert "change +7.0 % (intervals +6.8 to +7.2 %) over 1 comparison: 1 reproduced" in md
    assert "| **not testable here** | not testable here: vMotion (moving a running VM between hypervisor hosts)" in md
    # NFS ahead of iSCSI: the fourth finding's claims are opposite, and the bottleneck analysis says what held them
    m, md, html = section({**held, ("vmtn-max-50read", "nfs-1500"): 4000.0, ("vmtn-max-50read", "nfs-9000"): 4080.0},
                          "cpu")
    assert [v.verdict for v in m.verdicts][3:5] == ["opposite", "opposite"]
    assert "change −50 % (intervals −50 %) over 1 comparison: 1 opposite" in md
    reason = "Where it was not reproduced, the bottleneck analysis found iscsi-1500 by tgtd CPU (1 of 1 cells)"
    assert reason in md and reason in html
    assert "Why this machine may differ" not in md + html and "here" not in plan.seed_findings[0].model_fields_set


def test_readme_seed_and_fill_examples_are_valid():
    import re

    from protolab.plan.load import load_plan_text

    readme = (ROOT / "docs" / "plan.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if b.startswith('seed = "S1'))
    head = 'name = "x"\nbaseline = "a"\nworkloads = ["tr3808-4k"]\n'
    tail = ('[[configurations]]\nname = "a"\ntarget = "/tmp/a"\n[[load_points]]\nstreams = 1\n[method]\n'
            'fill = { levels = [10, 25, 50, 100] }\n')
    plan = load_plan_text(head + block + tail, source="README seed")
    assert plan.seed_findings[0].metric == "iops" and plan.fill.levels == [10, 25, 50, 100]
    assert "# [stage.fill] levels = [10, 25, 50, 100]" in readme  # the main example keeps prepare = true


def test_a_seed_finding_naming_an_unknown_workload_is_refused_in_one_line():
    from protolab.errors import PlanError
    from protolab.plan.load import load_plan_text

    text = builtin_studies()["jumbo-vmtn"].replace('workloads = ["vmtn-max-50read"]', 'workloads = ["vmtn-max50"]')
    with pytest.raises(PlanError) as e:
        load_plan_text(text, source="j.toml", scale="quick")
    msg = str(e.value)
    assert "seed_findings: workload(s) vmtn-max50 are not in the plan" in msg and "\n" not in msg


@pytest.mark.parametrize("name, swept, values, own", [
    ("tr3808", "service_time", (500, 5500), 5500),  # hdd-array's 5.5 ms and one value below the band's edge
    ("exchange", "link_rate", (400, 1250, 5000), 1250),  # the link whose use by the mean is the seed's (0.20)
    ("jumbo-vmtn", "link_rate", (1000, 10000), 1000),  # the seed's one 1GbE link; no device model to sweep
])
def test_the_seed_studies_sweep_around_their_chosen_point_at_quick_scale_only(name, swept, values, own):
    from protolab.plan.sweep import chosen

    quick, _ = load_builtin(name, "quick")
    [axis] = quick.sweep.axes()
    assert (axis.name, axis.values) == (swept, values) and chosen(quick) == {swept: own} and own in axis.values
    assert "min, root)" in quick.description  # the quick run's time, from the window count in the plan's comments
    full, _ = load_builtin(name, "full")
    assert full.sweep is None
