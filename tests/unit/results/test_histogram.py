"""A record's latency histogram (results.histogram): compact, read as a Mapping, stored as the same JSON object."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from pydantic import ValidationError

from protolab.analysis.latency import merge_bins, merged_percentiles, percentiles
from protolab.results.histogram import Histogram
from protolab.results.records import DirectionResult

BINS = {1_000: 5, 250: 2, 40_000: 1}


def test_reads_as_the_mapping_it_was_given():
    h = DirectionResult(bins_ns=BINS).bins_ns
    assert isinstance(h, Histogram)
    assert h == BINS and dict(h) == BINS and len(h) == 3 and list(h) == [1_000, 250, 40_000]
    assert h[1_000] == 5 and h.get(7) is None and 250 in h and list(h.values()) == [5, 2, 1]
    with pytest.raises(KeyError):
        h[999]
    assert not DirectionResult().bins_ns


def test_the_record_on_disk_is_unchanged():
    d = DirectionResult(ios=8, bins_ns=BINS)
    text = d.model_dump_json()
    assert json.loads(text)["bins_ns"] == {"1000": 5, "250": 2, "40000": 1}
    assert DirectionResult.model_validate_json(text) == d
    assert DirectionResult.model_validate_json('{"bins_ns": {"7": 1}}').bins_ns == {7: 1}


@pytest.mark.parametrize("bad", ['{"x": 1}', '{"1": -1}', '{"1": 1.5}', '{"1": true}', '[1, 2]',
                                 '{"99999999999999999999": 1}'])
def test_a_bin_that_is_not_a_whole_number_is_refused(bad):
    with pytest.raises(ValidationError):
        DirectionResult.model_validate_json('{"bins_ns": %s}' % bad)


def test_merged_percentiles_match_the_plain_dicts():
    hs = [{100: 3, 200: 1}, {150: 2, 200: 4, 900: 1}, {}]
    want = percentiles(merge_bins(hs))
    got, n = merged_percentiles(DirectionResult(bins_ns=h).bins_ns for h in hs)
    assert (got, n) == (want, 11)
    assert merged_percentiles(hs) == (want, 11)


def test_a_thousand_histograms_take_under_a_third_of_the_dicts_memory():
    bins = {int(1000 * 1.1 ** i): i + 1 for i in range(60)}

    def held(make) -> int:
        tracemalloc.start()
        kept = [make() for _ in range(1000)]
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept) == 1000
        return size

    as_dicts = held(lambda: {k + 0: v + 0 for k, v in bins.items()})
    compact = held(lambda: Histogram(bins))
    assert compact * 3 < as_dicts, (compact, as_dicts)
