"""The summary matrix (analysis.summary) and its headlines (analysis.headlines), from synthetic verdicts."""

from __future__ import annotations

import math

from protolab.analysis.headlines import MOST, headlines
from protolab.analysis.relative import Row
from protolab.analysis.stats import HIGHER, LOWER, NO_CLEAR_DIFFERENCE, NOT_TESTED, Verdict
from protolab.analysis.summary import ABSOLUTE, BASELINE, MIXED, NONE, SAME, UNTESTED, Matrix, MatrixRow, matrix
from protolab.plan.coordinates import Point

LOADS = [Point((("load", i),), f"L{i}") for i in range(3)]


def v(call: str, ratio: float, lo: float, hi: float, detectable: float = math.nan) -> Verdict:
    return Verdict("", call, ratio, lo, hi, 0.01, 0.01, "not tested (2 repeats; 3 needed)" if call == NOT_TESTED
                   else "", n_min=2 if call == NOT_TESTED else 5, detectable=detectable,
                   alpha_tested=0.01 if call == NO_CLEAR_DIFFERENCE else math.nan)


def rows(workload: str, table: dict[str, list[float]], base: float = 1000.0) -> list[Row]:
    """Rows of one workload: each configuration's IOPS as % of the baseline at each load point."""
    out = []
    for c, pcts in table.items():
        for p, x in zip(LOADS, pcts):
            out.append(Row(workload, p, c, c == "base", 5, {"iops": base * x / 100}, {"iops": [base * x / 100] * 5},
                           {"iops": x}))
    return out


def study(workload: str, calls: dict[str, list[Verdict]]):
    table = {"base": [100.0] * 3, **{c: [100 * x.ratio for x in vs] for c, vs in calls.items()}}
    verdicts = {("iops", workload, p, c): x for c, vs in calls.items() for p, x in zip(LOADS, vs)}
    return rows(workload, table), verdicts


def test_a_cell_is_called_only_when_every_load_point_agrees_and_says_what_could_have_been_seen():
    calls = {"down": [v(LOWER, 0.3, 0.25, 0.35), v(LOWER, 0.4, 0.3, 0.45), v(LOWER, 0.35, 0.3, 0.4)],
             "some": [v(LOWER, 0.5, 0.4, 0.6), v(NO_CLEAR_DIFFERENCE, 0.98, 0.9, 1.1, 0.08), v(LOWER, 0.6, 0.5, 0.7)],
             "same": [v(NO_CLEAR_DIFFERENCE, 1.01, 0.95, 1.07, 0.06), v(NO_CLEAR_DIFFERENCE, 0.99, 0.9, 1.05, 0.11),
                      v(NO_CLEAR_DIFFERENCE, 1.0, 0.97, 1.03, 0.04)],
             "few": [v(NOT_TESTED, 0.5, 0.4, 0.6), v(NO_CLEAR_DIFFERENCE, 1.0, 0.9, 1.1, 0.1),
                     v(NOT_TESTED, 0.5, 0.4, 0.6)]}
    rs, vs = study("w", calls)
    m = matrix("w", rs, vs, {}, "base", ["base", *calls], ["iops"])
    cells = {r.configuration: r.cells["iops"] for r in m.rows}
    assert [r.configuration for r in m.rows][0] == "base" and cells["base"].state == BASELINE
    assert cells["base"].value == 1000.0 and cells["base"].low is None  # one value at every load point
    d = cells["down"]
    assert d.state == LOWER and d.value == 35.0 and (d.low, d.high) == (25.0, 45.0) and d.better is False
    assert cells["some"].state == MIXED and "lower at 2 of 3 load points (L0, L2)" in cells["some"].why
    s = cells["same"]
    assert s.state == SAME and s.detectable == 11.0 and (s.low, s.high) == (90.0, 107.0)
    f = cells["few"]
    assert f.state == UNTESTED and f.why.startswith("2 repeats; 3 needed") and "2 of 3 load points" in f.why


def test_headlines_group_configurations_give_ranges_and_rank_by_sure_effect_size():
    big = [v(LOWER, 0.3, 0.25, 0.35)] * 3
    also = [v(LOWER, 0.38, 0.3, 0.45)] * 3
    wide = [v(HIGHER, 3.0, 1.05, 6.0)] * 3  # large but barely sure: ranks below a smaller, tight change
    rs, vs = study("w", {"a": big, "b": also, "c": wide})
    m = matrix("w", rs, vs, {}, "base", ["base", "a", "b", "c"], ["iops"])
    hs = headlines([m])
    assert hs[0].text == "w: a and b had 62–70 % fewer IOPS than base at every load point."
    assert hs[0].configurations == ("a", "b") and (hs[0].low_pct, hs[0].high_pct) == (62.0, 70.0)
    assert hs[1].text == "w: c had 200 % more IOPS than base at every load point."
    assert hs[0].score > hs[1].score


def test_headlines_merge_workloads_and_stop_at_ten():
    out = []
    for i in range(12):
        rs, vs = study(f"w{i}", {"a": [v(LOWER, 0.5 - i / 100, 0.4 - i / 100, 0.6 - i / 100)] * 3})
        out.append(matrix(f"w{i}", rs, vs, {}, "base", ["base", "a"], ["iops"]))
    hs = headlines(out)
    [h] = hs  # one sentence: the same configuration, metric, direction and coverage everywhere
    assert h.text == "In every workload, a had 50–61 % fewer IOPS than base at every load point."
    # different configurations per workload do not merge; the list is cut at MOST
    many = []
    for i in range(12):
        rs, vs = study(f"w{i}", {f"c{i}": [v(LOWER, 0.5, 0.4, 0.6 + i / 100)] * 3})
        many.append(matrix(f"w{i}", rs, vs, {}, "base", ["base", f"c{i}"], ["iops"]))
    hs = headlines(many)
    assert len(hs) == MOST == 10
    # ranked by the conservative effect: the interval's nearer end (0.60, 0.61, …) closest to 1 ranks last
    assert [h.workloads[0] for h in hs] == [f"w{i}" for i in range(10)]


def test_a_workload_where_nothing_was_called_says_so_with_what_it_could_have_seen():
    rs, vs = study("w", {"a": [v(NO_CLEAR_DIFFERENCE, 1.0, 0.9, 1.1, 0.07)] * 3,
                         "b": [v(NO_CLEAR_DIFFERENCE, 1.0, 0.9, 1.1, 0.12)] * 3})
    [h] = headlines([matrix("w", rs, vs, {}, "base", ["base", "a", "b"], ["iops"])])
    assert h.kind == "none"
    assert h.text == ("w: no difference from base was called in any metric (the smallest difference it could have "
                      "detected, 80 % power: 7.0–12 %).")


def test_a_workload_where_nothing_could_be_tested_never_reads_as_no_difference():
    rs, vs = study("w", {"a": [v(NOT_TESTED, 0.5, 0.4, 0.6)] * 3})
    [h] = headlines([matrix("w", rs, vs, {}, "base", ["base", "a"], ["iops"])])
    assert h.text == "w: no comparison with base could be tested (2 repeats; 3 needed)."


def test_a_metric_the_baseline_has_none_of_shows_each_configurations_own_value_absolute():
    rs = []
    for p, (base_iops, a_iops, a_cpu) in zip(LOADS, [(1000, 900, 4.2), (1000, 900, 6.4), (1000, 900, 5.1)]):
        rs.append(Row("w", p, "base", True, 5, {"iops": base_iops, "cpu_us_per_io_server": None,
                                                "packets_per_io": 0.0}, {}, {"iops": 100.0}))
        rs.append(Row("w", p, "a", False, 5, {"iops": a_iops, "cpu_us_per_io_server": a_cpu, "packets_per_io": 4.06},
                      {}, {"iops": 90.0, "cpu_us_per_io_server": None, "packets_per_io": None}))
    m = matrix("w", rs, {}, {}, "base", ["base", "a"], ["iops", "cpu_us_per_io_server", "packets_per_io"])
    base, a = (r.cells["cpu_us_per_io_server"] for r in m.rows)
    assert base.state == NONE and a.state == ABSOLUTE
    assert (a.value, a.low, a.high) == (5.1, 4.2, 6.4)  # its own median over load points and their range
    assert m.rows[1].cells["packets_per_io"].state == ABSOLUTE  # a baseline of zero packets has none to compare
    assert m.rows[1].cells["iops"].state == UNTESTED  # a % of the baseline where there is one (here no test)

    from protolab.report.sections.summary_section import _table
    t = _table(m)
    assert t.headers == ["configuration", "IOPS", "srv CPU µs/IO (absolute)", "pkts/IO (absolute)", "held back by"]
    assert t.rows[1][2].text == "5.1 (4.2–6.4) CPU µs/I/O" and t.rows[0][2].text == "–"
    assert [r[3].text for r in t.rows] == ["0", "4.06 packets/I/O"]
    assert t.notes == ["not tested: no test"]  # the absolute cell is not an n.t.


def test_what_held_a_workload_back_is_a_short_sentence_per_bound_at_most_three():
    def row(c: str, *held: str) -> MatrixRow:
        return MatrixRow(c, c == "base", {}, "", held)

    m = Matrix("w", "base", [], [row("base", "the wire"), row("a", "the wire"), row("b", "tgtd's CPU", "the wire"),
                                 row("c", "tgtd's CPU")])
    [h] = [h for h in headlines([m, Matrix("x", "base", [], [row("base")])]) if h.kind == "held"]  # none for x
    assert h.kind == "held" and h.configurations == ("base", "a", "b", "c")
    assert h.text == ("w: base and a were held back by the wire, and b at some load points. "
                      "c was held back by tgtd's CPU, and b at some load points.")
    many = Matrix("w", "base", [], [row(f"c{i}", f"bound {i}") for i in range(5)])
    [h] = [h for h in headlines([many]) if h.kind == "held"]
    assert h.text == ("w: c0 was held back by bound 0. c1 was held back by bound 1. c2 was held back by bound 2. "
                      "2 more bounds: see the summary's last column.")
    assert max(len(s.split()) for s in h.text.split(". ")) <= 12  # one bound per sentence, each short
