"""`protolab validate --builtin NAME`: the built-in studies resolved as `run --builtin` resolves them."""

from __future__ import annotations

import json
import sys

import pytest

from protolab.commands import main


def _cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["protolab", *argv])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_validate_a_builtin_study_prints_its_matrix_and_time(monkeypatch, capsys):
    code, out, _ = _cli(monkeypatch, capsys, "validate", "--builtin", "demo")
    assert code == 0
    assert out == ("builtin:demo: plan 'demo' is valid — 2 configurations × 1 workloads × 3 load points × 3 repeats "
                   "= 18 cells, about 2.1 min of measurement\n")
    code, out, _ = _cli(monkeypatch, capsys, "validate", "-b", "tr3916-vm", "--scale", "quick", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["plan"] == "builtin:tr3916-vm" and doc["scale"] == "quick" and doc["cells"] == 12


@pytest.mark.parametrize("argv, message", [
    (("--builtin", "nope"), "--builtin nope: no such built-in study; choose one of: array-speed, demo,"),
    (("p.toml", "--builtin", "demo"), "give a plan file or --builtin NAME (one of them); see 'protolab plans'"),
    ((), "give a plan file or --builtin NAME (one of them)"),
])
def test_validate_refuses_a_bad_builtin_in_one_line(monkeypatch, capsys, argv, message):
    code, out, err = _cli(monkeypatch, capsys, "validate", *argv)
    assert code == 2 and out == "" and err.startswith("protolab: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
