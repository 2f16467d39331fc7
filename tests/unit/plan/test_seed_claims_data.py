"""The seeds' findings as the built-in plans state them: every finding has the seed's section and either claims or a
one-line reason it cannot be tested here; the headline findings of S1–S5 are each there; "host CPU" is the load
host's; and no plan comment gives a verdict as the reason for a setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from protolab.plan.load import load_builtin

STUDIES = Path(__file__).resolve().parents[3] / "src" / "protolab" / "plan" / "studies"
SEEDED = ("tr3808", "tr3916-shared", "tr3916-vm", "exchange", "emc-fill-aging", "jumbo-vmtn")


@pytest.mark.parametrize("name", SEEDED)
def test_every_finding_has_its_section_and_claims_or_a_reason(name):
    plan, _ = load_builtin(name, "quick")
    for f in plan.seed_findings:
        assert f.section, f.said
        # the time finding of exchange is quoted: its figure is the long-run sentence, not a band
        assert bool(f.claims) != bool(f.untestable) or (name == "exchange" and f.compare == "time"), f.said


def _claims(name: str, scale: str = "quick"):
    plan, _ = load_builtin(name, scale)
    return plan, [(f, c) for f in plan.seed_findings for c in f.claims]


def test_s1_headlines_are_claims_with_the_seeds_numbers_on_the_load_hosts_cpu():
    plan, claims = _claims("tr3808")
    by = {(f.section, f.said[:30]): (f, c) for f, c in claims}
    within = [(f, c) for f, c in claims if f.section == "§2.2" and f.metrics == ["iops"] and f.compare == "baseline"
              and c.reference is None]
    assert [(c.within, c.at_least, c.subjects) for _, c in within] == [(9, None, [])]  # two-sided
    assert any(f.section == "§8.1" and c.within == 11 and f.workloads == ["tr3808-8k"] for f, c in claims)
    assert any(f.section == "§7.2" and c.band == (12, 40) for f, c in claims)
    assert any(f.section == "§7.3" and f.compare == "mtu" and c.band == (5, 8) for f, c in claims)
    assert any(f.section == "§7.3" and c.within == 10 and f.metrics == ["lat_mean_us"] for f, c in claims)
    rr = [c for f, c in claims if "round-robin" in f.said]
    assert [(c.subjects, c.reference, c.within, c.band_source) for c in rr] == \
        [(["iscsi-1g-1500-rr"], "iscsi-1g-1500", 5, "protolab")]
    assert any(c.reference == "nfs-1g-1500" and c.better for _, c in claims)  # iSCSI less host CPU than NFS
    cpu = [f for f, c in claims if "CPU" in f.said]
    assert cpu and all(f.claim_metrics(c) == ["cpu_us_per_io_loadgen"] for f, c in claims if f in cpu
                       and "cpu" in f.claim_metrics(c)[0])
    assert not any("cpu_us_per_io_total" in f.claim_metrics(c) for f, c in claims)
    assert any("ESX 3.5" in (f.untestable or "") for f in plan.seed_findings)
    assert by  # the sections above are the seed's own (grep the seed: "7.2 RELATIVE ESX SERVER CPU ...")


def test_s2_to_s5_headlines_are_claims_or_say_why_not():
    shared, _ = load_builtin("tr3916-shared", "quick")
    assert [(f.section, bool(f.claims), bool(f.untestable)) for f in shared.seed_findings] == \
        [("§2.1", True, False), ("§2.1", True, False), ("§2.1", False, True), ("§2.1", False, True)]
    vm, _ = load_builtin("tr3916-vm", "quick")
    behind = next(f for f in vm.seed_findings if "1GbE" in f.said)
    assert behind.untestable and "6% to 8%" in behind.said
    _, ex = _claims("exchange")
    assert {(tuple(c.subjects), f.claim_metrics(c)[0], c.worse) for f, c in ex if f.section == "Conclusion"} == \
        {(("iscsi-1x1g", "nfs-1x1g"), "lat_mean_us", True), (("iscsi-1x1g", "nfs-1x1g"), "cpu_us_per_io_loadgen", True)}
    emc, claims = _claims("emc-fill-aging")
    aging = sorted((c.horizon, c.band) for f, c in claims if f.compare == "time" and c.layout == "copy-on-write")
    assert aging == [("24h", (None, -21)), ("48h", (None, -30)), ("72h", (None, -38))]
    flat = [c for f, c in claims if c.layout == "in-place"]
    assert [(c.band, c.horizon, c.band_source) for c in flat] == [((-5, None), None, "protolab")]
    assert any(c.subjects == ["iscsi"] and c.within == 5 for _, c in claims)  # FC and iSCSI the same
    assert any("32- and 96-drive" in f.said and f.untestable for f in emc.seed_findings)
    _, jumbo = _claims("jumbo-vmtn")
    nfs = {tuple(f.workloads): c.band for f, c in jumbo if c.subjects == ["nfs-*"]}
    assert nfs == {("vmtn-real-life", "vmtn-max-50read", "vmtn-random-8k"): (0, 3), ("vmtn-max-read",): (5, 9)}
    assert any(c.subjects == ["iscsi-*"] and c.band == (None, 1) and "vmtn-max-read" not in f.workloads
               for f, c in jumbo)


#: words that give a verdict as a reason
VERDICT_WORDS = re.compile(r"reproduced|inconclusive|\bof 2\b|claim held|held on", re.IGNORECASE)


def test_no_plan_comment_gives_a_verdict_as_the_reason_for_a_setting():
    said = []
    for path in sorted(STUDIES.glob("*.toml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            comment = line.split("#", 1)[1] if "#" in line else ""
            if VERDICT_WORDS.search(comment):
                said.append(f"{path.name}:{n}: {comment.strip()}")
    assert said == []


def test_the_comment_grep_finds_a_verdict_given_as_a_reason():
    line = 'cpu_priority = "high"   # at the highest weight reproduced in 2 of 2 (0.91-1.01)'
    assert VERDICT_WORDS.search(line.split("#", 1)[1])
    assert VERDICT_WORDS.search("# at 100 Mbit/s the claim held on one workload of two")
    assert not VERDICT_WORDS.search("# 10,000 / (10,000 + 100) = 0.99 of the CPU it asks for")
