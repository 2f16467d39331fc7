"""The report's model is built once: frozen after construction, every field typed (no `Any`)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from protolab.report.report_data import ReportData, RunData
from protolab.results.manifest import Manifest


def _empty() -> ReportData:
    return ReportData(run_id="r", manifest=Manifest(), plan=None, baseline="", workloads=[], configurations=[],
                      rows=[], verdicts={}, metrics=[], absent=[], findings=[])


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(ReportData)])
def test_no_field_of_the_report_data_can_be_assigned_after_it_is_built(name):
    data = _empty()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(data, name, getattr(data, name))


def test_every_field_of_the_report_data_has_a_real_type():
    typed = {f.name: str(f.type) for cls in (RunData, ReportData) for f in dataclasses.fields(cls)}
    assert len(typed) == 32 and not [n for n, t in typed.items() if re.search(r"\bAny\b|\bobject\b", t)], typed
    # the parts the analysis makes are its own types, named
    assert typed["bottlenecks"] == "dict[CellKey, Bottleneck]" and typed["matrices"] == "list[Matrix]"
    assert typed["headlines"] == "list[Headline]" and typed["trends"] == "dict[tuple[str, str], list[Trend | None]]"
    assert typed["verified"] == "list[ConfigurationVerified]" and typed["faults"] == "FaultData | None"
    assert typed["breakdown"] == "list[BreakdownRow]"


def test_the_run_as_read_is_the_first_part_of_the_report_data():
    data = _empty()
    run = RunData(**{k: v for k, v in data.parts().items()})
    assert dataclasses.replace(data, findings=[]) == data and run.parts() == data.parts()
    assert [f.name for f in dataclasses.fields(RunData)] == [f.name for f in dataclasses.fields(ReportData)][:14]
