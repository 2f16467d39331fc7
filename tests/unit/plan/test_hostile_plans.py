"""The corpus of hostile plans (tests/data/hostile-plans; a first line "# expect: TEXT" names what the error says): `validate` and `run` refuse each in one line, exit 2,
and nothing is created — no results, no target file, no file a fio option or ssh option named."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import DATA
from protolab import cli as protolab_cli

CORPUS = DATA / "hostile-plans"
PLANS = sorted(CORPUS.glob("*.toml"))
MARK = Path("/tmp/protolab-hostile")


def _cli(capsys, *args) -> tuple[int, str, str]:
    """`protolab ARGS` in this process, through main() as the console script runs it."""
    old = sys.argv
    sys.argv = ["protolab", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as ex:
            protolab_cli.main()
    finally:
        sys.argv = old
    out = capsys.readouterr()
    return ex.value.code, out.out, out.err


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def refused(capsys, tmp_path: Path, plan: Path, expect: str | None = None) -> None:
    """validate and run both refuse ``plan`` in one line, exit 2, and leave ``tmp_path`` as it was."""
    before = _tree(tmp_path)
    lines = {}
    for command in ("validate", "run"):
        extra = ["--results", tmp_path / "results", "--lab-workdir", tmp_path / "lab"] if command == "run" else []
        code, out, err = _cli(capsys, command, plan, *extra)
        assert code == 2, (command, plan.name, out, err)
        assert "Traceback" not in out + err
        assert len(err.strip().splitlines()) == 1, (command, err)
        assert err.startswith("protolab: error: "), err
        if expect:
            assert expect in err, (command, expect, err)
        lines[command] = err
    assert _tree(tmp_path) == before, f"{plan.name}: files appeared: {_tree(tmp_path) - before}"
    assert not MARK.exists()


def test_corpus_is_large():
    assert len(PLANS) >= 90


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_hostile_plan_refused(plan, tmp_path, capsys, monkeypatch):
    first = (plan.read_text().splitlines() or [""])[0]
    expect = first.removeprefix("# expect: ") if first.startswith("# expect: ") else None
    copy = tmp_path / plan.name
    copy.write_text(plan.read_text())
    monkeypatch.chdir(tmp_path)  # relative targets (./data/disk.dat) would land here
    refused(capsys, tmp_path, copy, expect)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "directory", "device", "symlink-loop"])
def test_hostile_plan_file(kind, tmp_path, capsys, monkeypatch):
    """Refused at once: a FIFO does not hang, /dev/zero does not fill memory."""
    plan = tmp_path / "plan.toml"
    expect = {"fifo": "not a regular file", "dev-zero": "not a regular file", "huge": "MiB",
              "directory": "is a directory", "device": "not a regular file", "symlink-loop": "cannot read"}[kind]
    if kind == "fifo":
        os.mkfifo(plan)
    elif kind == "dev-zero":
        plan.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(plan, "wb") as f:
            f.truncate(64 * 1024**2)  # sparse: 64 MiB of NULs, costs no disk
    elif kind == "directory":
        plan.mkdir()
    elif kind == "device":
        plan.symlink_to("/dev/null")
    else:
        plan.symlink_to(plan)
    monkeypatch.chdir(tmp_path)
    refused(capsys, tmp_path, plan, expect)
