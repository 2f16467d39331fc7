"""Reading some windows' series from series.csv gives exactly those windows' part of the whole file's."""

from __future__ import annotations

import pytest

from protolab.plan.migrate import PLAN_FORMAT
from protolab.results import seriesfile
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import SeriesRow
from protolab.results.rundir import RunDir


@pytest.mark.parametrize("block", [1 << 22, 7, 64])  # lines cut across blocks of the file, and one block
@pytest.mark.parametrize("many", [False, True])  # one expression per block, or line by line (many seqs)
def test_a_subset_of_seqs_reads_as_the_whole_file_filtered(tmp_path, monkeypatch, block, many):
    monkeypatch.setattr(seriesfile, "BLOCK", block)
    if many:
        monkeypatch.setattr(seriesfile, "FEW_SEQS", 0)
    rd = RunDir.create(tmp_path, "t", RunStart(plan={"name": "t"}, plan_text="", plan_format=PLAN_FORMAT,
                                              provenance=Provenance(protolab="0", kernel="6", fio_version="fio")))
    for seq in range(1, 13):
        rd.add_series([SeriesRow(seq=seq, cell_id=f"c{seq}", phase=phase, host=host, t_s=t, iops=seq * 100.0 + t)
                       for phase in ("warmup", "measure") for host in ("all", "h1") for t in (2.0, 1.0, 3.0)])
    with (rd.path / "series.csv").open("a") as f:  # written by hand: a quoted seq and a leading zero
        f.write('"5",c5,measure,all,4.0,504.0\n05,c5,measure,all,5.0,505.0\n\n15,c1,measure,all,1.0,1\n'
                '12,c12,measure,all,4.0,1204.0\n1,c1,measure,all,4.0')  # a torn last line (no value, no newline)
    whole = rd.series("measure")
    assert whole[12]["all"] == [1201.0, 1202.0, 1203.0, 1204.0] and whole[1]["all"] == [101.0, 102.0, 103.0]
    for seqs in ({5, 12}, {1}, {2}, {12}, set(), {99}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}):
        assert rd.series("measure", seqs) == {k: v for k, v in whole.items() if k in seqs}, seqs
    assert rd.series("measure", {5})[5]["all"] == [501.0, 502.0, 503.0, 504.0, 505.0]
    assert rd.series("measure", {1})[1]["h1"] == [101.0, 102.0, 103.0]  # not 12's, nor 15's
