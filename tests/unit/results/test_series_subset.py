"""Reading some windows' series from series.csv gives exactly those windows' part of the whole file's."""

from __future__ import annotations

from protolab.plan.migrate import PLAN_FORMAT
from protolab.results.manifest import Provenance, RunStart
from protolab.results.records import SeriesRow
from protolab.results.rundir import RunDir


def test_a_subset_of_seqs_reads_as_the_whole_file_filtered(tmp_path):
    rd = RunDir.create(tmp_path, "t", RunStart(plan={"name": "t"}, plan_text="", plan_format=PLAN_FORMAT,
                                              provenance=Provenance(protolab="0", kernel="6", fio_version="fio")))
    for seq in range(1, 13):
        rd.add_series([SeriesRow(seq=seq, cell_id=f"c{seq}", phase=phase, host=host, t_s=t, iops=seq * 100.0 + t)
                       for phase in ("warmup", "measure") for host in ("all", "h1") for t in (2.0, 1.0, 3.0)])
    with (rd.path / "series.csv").open("a") as f:  # written by hand: a quoted seq and a leading zero
        f.write('"5",c5,measure,all,4.0,504.0\n05,c5,measure,all,5.0,505.0\n')
    whole = rd.series("measure")
    for seqs in ({5, 12}, {1}, set(), {99}):
        assert rd.series("measure", seqs) == {k: v for k, v in whole.items() if k in seqs}
    assert rd.series("measure", {5})[5]["all"] == [501.0, 502.0, 503.0, 504.0, 505.0]
