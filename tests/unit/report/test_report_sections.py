"""Report sections: one model each, rendered to report.md and report.html, so a section is in both or neither."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import DATA
from protolab.report.commands import write_report
from protolab.report.sections import sections
from protolab.results.manifest import Manifest
from protolab.results.rundir import RunDir

GOLDEN = DATA / "golden"


def _report(tmp_path, name: str, edit=None) -> tuple[str, str]:
    run = tmp_path / name
    shutil.copytree(GOLDEN / name / "run", run)
    if edit is not None:
        m = json.loads((run / "manifest.json").read_text())
        edit(m)
        (run / "manifest.json").write_text(json.dumps(m))
    write_report(RunDir.open(run), figures=False)
    return (run / "report.md").read_text(), (run / "report.html").read_text()


def test_the_vm_and_seed_sections_are_in_both_formats(tmp_path):
    md, html = _report(tmp_path, "tr3916-vm-quick")
    for s in sections():
        title = s.title
        assert (f"## {title}" in md) == (f'<section id="{s.name}">' in html), title
    assert "## Virtual machines as load hosts" in md and '<section id="vms">' in html
    assert "vCPU µs/IO" in md and "<th>vCPU µs/IO</th>" in html and "Under TCG every guest instruction" in html
    assert "## The seed's claims, tested" in md and '<section id="seed">' in html
    assert "## Sessions" not in md and 'id="sessions"' not in html  # one session: nothing to say


def test_the_sessions_section_lists_each_session_in_both_formats(tmp_path):
    def two_sessions(m):
        first = dict(m["sessions"][0])
        m["sessions"] = [{**first, "how": "interrupted"}, {**first, "session": 2, "how": "complete"}]

    md, html = _report(tmp_path, "exchange-quick", two_sessions)
    assert "## Sessions" in md and '<section id="sessions">' in html
    assert md.count("- session ") == 2 and html.count("<li>session ") == 2
    assert "ended interrupted" in md and "ended interrupted" in html
    assert '<a href="#sessions">sessions</a>' in html  # the page's navigation lists it


@pytest.mark.parametrize("section", sections(), ids=lambda s: s.name)
def test_a_section_with_nothing_to_say_is_in_neither_format(section, tmp_path):
    from types import SimpleNamespace as NS

    empty = NS(manifest=Manifest.model_validate({"sessions": [{"session": 1}]}), plan=None, records=[], configurations=[], findings=[],
               bottlenecks={})
    assert section.build(empty) is None
