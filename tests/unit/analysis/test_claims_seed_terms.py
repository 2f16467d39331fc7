"""Claims as the seeds state them: "within" both ways, a finding's section and a band's source, a finding the lab
cannot test, claims about one pool layout (an in-place run that stays flat reproduces "stayed flat"), the detectable
difference of every part and the repeats that would decide an inconclusive claim."""

from __future__ import annotations

import math

import pytest
from test_claims import PLAN, one, plan, run  # the sibling test module's synthetic runs

from protolab.analysis.claimpower import repeats_to_decide, trend_mdd
from protolab.analysis.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, claim_verdicts
from protolab.analysis.trend import Trend
from protolab.plan.load import load_plan_text


def test_a_gain_of_twelve_percent_is_not_within_nine():
    v = one(plan("{ within = 9 }"), run({"base": (1, 1), "other": (1.12, 1), "third": (1.0, 1)}))
    assert v.verdict == NOT_REPRODUCED
    assert {(p.subject, p.outcome) for p in v.parts} == {("other", NOT_REPRODUCED), ("third", REPRODUCED)}
    assert all(p.low > 9 for p in v.parts if p.subject == "other")
    assert v.claim == "IOPS: every configuration against base: change within ±9 %"
    # the one-sided reading it replaces lets the same gain pass
    assert one(plan("{ at_least = -9 }"), run({"base": (1, 1), "other": (1.12, 1), "third": (1.0, 1)})).verdict \
        == REPRODUCED


def _with(extra: str, claim: str = "{ within = 5 }", compare: str = "baseline"):
    text = PLAN.format(claim=claim, metric='"iops"', compare=compare)
    return load_plan_text(text.replace('said = "The seed\'s words."', 'said = "The seed\'s words."\n' + extra))


def test_section_and_protolabs_band_are_carried_to_the_verdict_and_said():
    p = _with('section = "§8.1"', claim='{ within = 5, band_source = "protolab" }')
    v = one(p, run({"base": (1, 1), "other": (1.0, 1), "third": (1.01, 1)}))
    assert (v.section, v.band_source, v.verdict) == ("§8.1", "protolab", REPRODUCED)
    assert v.claim.endswith("change within ±5 % (protolab's band: the seed gives no number)")
    assert one(plan("{ within = 5 }"), run({"base": (1, 1), "other": (1, 1), "third": (1, 1)})).band_source == "seed"


def test_an_untestable_finding_says_why_in_one_verdict():
    text = PLAN.format(claim="", metric='"iops"', compare="baseline").replace(
        "claims = []", 'claims = []\nuntestable = "ESX 3.5 against vSphere: one hypervisor release here"')
    v = one(load_plan_text(text), run({"base": (1, 1), "other": (1, 1)}))
    assert (v.verdict, v.figures, v.parts) == (
        NOT_TESTABLE, "not testable here: ESX 3.5 against vSphere: one hypervisor release here", ())
    assert v.untestable.startswith("ESX 3.5") and v.claim == "—"


def test_a_claim_about_another_layout_is_not_testable_on_this_run():
    text = PLAN.format(claim='{ worse = true, layout = "copy-on-write" }', metric='"iops"', compare="time")
    text = text.replace('[targets.t]\nurl = "/srv/x"', '[lab]\ncow = false').replace('target = "t"',
                                                                                     'target = "lab:local"')
    p = load_plan_text(text)
    v = one(p, [], trends={("tr3808-4k", "other"): [Trend(-50.0, -60.0, -40.0, 10, 90000.0)]})
    assert v.verdict == NOT_TESTABLE and v.parts == ()
    assert v.figures == "not testable here: the claim is about a copy-on-write pool; this run's pool is in-place"


def test_an_in_place_run_that_stays_flat_reproduces_stayed_flat():
    text = PLAN.format(claim='{ at_least = -5, layout = "in-place", band_source = "protolab" }', metric='"iops"',
                       compare="time")
    text = text.replace('[targets.t]\nurl = "/srv/x"', '[lab]\ncow = false').replace('target = "t"',
                                                                                     'target = "lab:local"')
    p = load_plan_text(text)
    flat = {("tr3808-4k", "other"): [Trend(0.5, -20.0, 21.0, 6, 20.0)]}  # ±20 %/h over 20 s: ±0.1 %
    v = one(p, [], trends=flat)
    assert v.verdict == REPRODUCED, v
    [part] = v.parts
    assert part.change == pytest.approx(0.5 * 20 / 3600) and part.low > -5
    assert "over the long run's whole span" in v.claim and v.claim.endswith("; only where the pool is in-place")
    falling = {("tr3808-4k", "other"): [Trend(-3600.0, -3900.0, -3300.0, 6, 20.0)]}  # −20 % over its 20 s
    assert one(p, [], trends=falling).verdict == NOT_REPRODUCED


def test_every_tested_part_has_its_detectable_difference_and_the_table_gives_their_range():
    v = one(plan("{ within = 9 }"), run({"base": (1, 1), "other": (0.97, 1), "third": (1.0, 1)}, cv=0.02))
    assert all(p.mdd is not None and 2.0 <= p.mdd < 15 for p in v.parts)
    lo, hi = v.mdd_range
    assert (lo, hi) == (min(p.mdd for p in v.parts), max(p.mdd for p in v.parts))
    assert v.mdd == (f"{lo:.1f} %" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f} %")
    noisier = one(plan("{ within = 9 }"), run({"base": (1, 1), "other": (0.97, 1), "third": (1.0, 1)}, cv=0.06))
    assert noisier.mdd_range[0] > hi  # more spread, a larger difference needed to be seen
    untested = one(plan("{ within = 9 }"), run({"base": (1, 1), "other": (0.97, 1)}, n=2))
    assert untested.mdd == "" and all(p.mdd is None for p in untested.parts)


def test_an_inconclusive_claim_says_how_many_repeats_would_decide_it():
    v = one(plan('{ subjects = ["other"], at_least = -9 }'), run({"base": (1, 1), "other": (0.93, 1)}, n=3,
                                                                cv=0.04))
    assert v.verdict == INCONCLUSIVE
    need = [p.repeats for p in v.parts]
    assert all(n is not None and n > 3 for n in need) and v.repeats == max(need)
    assert v.decide == f"about {v.repeats:,} repeats a side would decide it at the variance seen (interval width ∝ 1/√n)"
    for p in v.parts:  # the formula: n₀ (h / |c − e|)², h the half-width on the edge's side; at least one more
        assert p.low < -9 < p.change
        assert p.repeats == max(4, math.ceil(3 * ((p.change - p.low) / (p.change + 9)) ** 2 - 1e-9))
    assert one(plan("{ within = 9 }"), run({"base": (1, 1), "other": (1, 1), "third": (1, 1)})).decide == ""


def test_a_claim_with_no_pair_of_cells_says_so_and_large_repeat_counts_read_with_separators():
    from protolab.analysis.claimwords import decide_words

    v = one(plan('{ subjects = ["third"], at_least = -9 }'), run({"base": (1, 1), "other": (1, 1)}))
    assert (v.verdict, v.figures) == (NOT_TESTABLE, "no comparison: this run measured no pair of cells the claim names")
    assert decide_words(177302, True).startswith("about 177,302 repeats a side")


def test_repeats_to_decide_scales_the_interval_by_one_over_root_n():
    # change −7 %, interval −12 to −2 at 3 repeats, edge −9: h = 5 on the edge's side, gap 2 → 3 · (5/2)² = 18.75
    assert repeats_to_decide(-7.0, -12.0, -2.0, 3, [-9.0]) == 19
    # both edges of ±9 crossed: the larger need wins (gap 2 on the lower side)
    assert repeats_to_decide(-7.0, -12.0, 10.0, 3, [-9.0, 9.0]) == 19
    assert repeats_to_decide(-9.0, -12.0, -6.0, 3, [-9.0]) is None  # on the edge: no number decides it
    assert repeats_to_decide(-7.0, -8.0, -6.0, 3, [-9.0]) is None  # clear of every edge, and no test figures
    # inside the band but not called: the log change must reach t · se (se ∝ 1/√n)
    # t(0.975, 4) = 2.776: 3 · (2.776 · 0.08 / ln 1.12)² = 3 · 1.960² = 11.5 → 12
    assert repeats_to_decide(12.0, 10.5, 40.0, 3, [10.0, 45.0], log_se=0.08, log_df=4.0, alpha=0.05) == 12


def test_a_trends_detectable_change_is_its_slope_power_over_the_horizon():
    # ±1.0 %/h at 95 % from 12 blocks: se = 1 / t(0.975, 10) = 0.449 %/h; λ(10, 0.05, 80 %) = 3.11 (noncentral
    # t; 2.228 + 0.879 by the usual approximation) → 1.40 %/h
    per_h = trend_mdd(-1.0, 1.0, 10, 1.0)
    assert per_h == pytest.approx(1.396, abs=0.005)
    assert trend_mdd(-1.0, 1.0, 10, 24.0) == pytest.approx(24 * per_h)
    assert trend_mdd(-1.0, 1.0, 0, 1.0) is None
    assert claim_verdicts(None, []) == []


def test_a_plan_stored_before_sections_and_band_sources_migrates_to_the_seeds_defaults():
    from protolab.plan.migrate import PLAN_FORMAT, migrate

    stored = {"seed_findings": [{"said": "x", "metric": "iops", "claims": [{"within": 9}]}]}
    assert PLAN_FORMAT == 10 and migrate(stored, 8) == {"seed_findings": [
        {"section": None, "untestable": None, "said": "x", "metric": "iops",
         "claims": [{"band_source": "seed", "layout": None, "within": 9}]}]}
