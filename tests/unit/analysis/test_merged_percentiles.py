"""The report's merged percentiles (numpy) are exactly merge_bins + percentiles (pure Python)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protolab.analysis.latency import merge_bins, merged_percentiles, percentiles

_HISTS = st.lists(st.dictionaries(st.integers(1, 10**12), st.integers(0, 10**9), max_size=40), max_size=6)


@given(_HISTS)
def test_merged_percentiles_equal_merge_bins_then_percentiles(hists):
    bins = merge_bins(hists)
    assert merged_percentiles(hists) == (percentiles(bins, in_order=True), sum(bins.values()))


@given(st.lists(st.dictionaries(st.integers(1, 20), st.integers(0, 3), max_size=20), min_size=1, max_size=6),
       st.lists(st.floats(0.1, 100), min_size=1, max_size=5, unique=True))
def test_shared_bins_and_any_percentiles(hists, ps):
    bins = merge_bins(hists)
    assert merged_percentiles(hists, ps) == (percentiles(bins, ps, in_order=True), sum(bins.values()))
