"""Plans are data: every hostile plan is refused by `validate` and by `run` in one line, exit 2, nothing created.

The corpus in tests/data/hostile-plans/ covers every field with wrong types, boundaries
and the attacks of issue 9 (commands, files overwritten or deleted, logs written
elsewhere, job-file injection, name traversal, ssh ProxyCommand). Each is run through
the real command line (in-process, so that hundreds of plans stay fast) from a
scratch directory whose every file is compared before and after.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT

CORPUS = sorted((DATA / "hostile-plans").glob("*.toml"))
#: Files an attack would create if it got through.
TRAPS = [Path("/tmp/protolab-pwned"), Path("/tmp/protolab-iolog"), Path("/tmp/protolab-bw"), Path("/tmp/escape")]


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _cli(argv: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    """protolab ARGV in this process: (exit code, stdout, stderr)."""
    import protolab.cli as cli

    monkeypatch.setattr(sys, "argv", ["protolab", *argv])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as e:
        cli.main()
    cap = capsys.readouterr()
    return int(e.value.code or 0), cap.out, cap.err


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working directory with a victim file that no plan may touch."""
    for t in TRAPS:
        t.unlink(missing_ok=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "victim").write_text("precious\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(argv, capsys, monkeypatch, root: Path) -> str:
    before = _tree(root)
    code, out, err = _cli(argv, capsys, monkeypatch)
    assert code == 2, (argv, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("protolab: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert _tree(root) == before, f"{argv}: files changed"
    assert not any(t.exists() for t in TRAPS)
    return lines[0]


@pytest.mark.parametrize("plan", CORPUS, ids=[p.stem for p in CORPUS])
def test_hostile_plan_refused_by_validate_and_run(plan, scratch, capsys, monkeypatch):
    shutil.copy(plan, scratch / "plan.toml")
    v = _refused(["validate", "plan.toml"], capsys, monkeypatch, scratch)
    r = _refused(["run", "plan.toml", "--results", "results"], capsys, monkeypatch, scratch)
    # the same reason (free disk space may change between the two calls: numbers masked)
    assert re.sub(r"\d+", "N", v) == re.sub(r"\d+", "N", r), "validate and run must refuse for the same reason"
    assert "plan.toml" in v


GOOD = """name = "ok"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1 }]
[method]
duration = 1
warmup = 0
repeats = 1
data_size = "4M"
[[configurations]]
name = "a"
target = "./data/t.dat"
"""


@pytest.mark.parametrize("attack, expect", [
    ('fio = { exec_prerun = "touch /tmp/protolab-pwned" }', "fio option 'exec_prerun' is not allowed in a plan; a plan cannot run commands"),
    ('fio = { filename = "victim" }', "fio option 'filename' is not allowed in a plan; name the storage in [targets]"),
    ('fio = { rw = "write", allow_file_create = 0 }', "fio option 'rw' is not allowed in a plan; set the workload's read_pct"),
    ('fio = { allow_file_create = 0 }', "fio option 'allow_file_create' is not allowed in a plan; protolab creates and keeps"),
    ('fio = { write_iolog = "/tmp/protolab-iolog" }', "fio option 'write_iolog' is not allowed in a plan; a plan cannot make protolab read or write files"),
    ('fio = { write_bw_log = "/tmp/protolab-bw" }', "fio option 'write_bw_log' is not allowed"),
    ('fio = { randrepeat = "0\\nexec_prerun=touch /tmp/protolab-pwned" }', "fio option 'randrepeat': value"),
    ('ioengine = "psync\\nexec_prerun=touch /tmp/protolab-pwned"', "is not an engine name"),
])
def test_each_fio_attack_is_refused_with_what_to_do(attack, expect, scratch, capsys, monkeypatch):
    (scratch / "plan.toml").write_text(GOOD + attack + "\n")
    for argv in (["validate", "plan.toml"], ["run", "plan.toml", "--results", "results"]):
        line = _refused(argv, capsys, monkeypatch, scratch)
        assert expect in line, line
        assert "configurations[0]" in line
    assert (scratch / "victim").read_text() == "precious\n"


def test_name_traversal_and_ssh_proxycommand_refused(scratch, capsys, monkeypatch):
    (scratch / "plan.toml").write_text(GOOD.replace('workloads = ["tr3808-4k"]',
                                                    'workloads = [{ name = "../../../../tmp/escape", base = "tr3808-4k" }]'))
    line = _refused(["run", "plan.toml", "--results", "results"], capsys, monkeypatch, scratch)
    assert "workloads[0].name: workload name '../../../../tmp/escape' is not allowed; use 1 to 64 letters" in line
    (scratch / "plan.toml").write_text(GOOD + '[[hosts]]\nname = "esx1"\nagent = "ssh://root@198.18.0.5"\n'
                                       'ssh_options = ["-o", "ProxyCommand=touch /tmp/protolab-pwned"]\n')
    line = _refused(["validate", "plan.toml"], capsys, monkeypatch, scratch)
    assert "hosts[0].ssh_options: ssh_options: -o 'ProxyCommand=touch /tmp/protolab-pwned' is not allowed" in line


def test_target_typo_names_the_closest_target(scratch, capsys, monkeypatch):
    (scratch / "plan.toml").write_text(GOOD.replace('target = "./data/t.dat"', 'target = "nvme-typo"')
                                       + '[targets.nvme]\nurl = "./data/t.dat"\n')
    line = _refused(["run", "plan.toml", "--results", "results"], capsys, monkeypatch, scratch)
    assert "configurations[0] (a).target: 'nvme-typo' is not a [targets] name, a URL or a path with '/'; " \
           "did you mean 'nvme'?" in line
    assert not (scratch / "nvme-typo").exists()


def test_strict_types_no_coercion(scratch, capsys, monkeypatch):
    cases = {
        'repeats = 1': ('repeats = "3"', "method.repeats: Input should be a valid integer (got '3')"),
        'workloads = ["tr3808-4k"]': ('workloads = [{ name = "tr3808-4k", read_pct = true }]',
                                     "workloads[0].read_pct: Input should be a valid number (got True)"),
        'target = "./data/t.dat"': ('target = { url = "./data/t.dat", allow_overwrite = "yes" }',
                                    "allow_overwrite: Input should be a valid boolean (got 'yes')"),
    }
    for old, (new, expect) in cases.items():
        (scratch / "plan.toml").write_text(GOOD.replace(old, new))
        line = _refused(["validate", "plan.toml"], capsys, monkeypatch, scratch)
        assert expect in line, line


def test_preflight_bounds(scratch, capsys, monkeypatch):
    cases = [
        ('load_points = [{ streams = 1 }]', 'load_points = [{ streams = 1, oio = 1000000000 }]',
         "load_points[0].oio: Input should be less than or equal to 32768"),
        ('duration = 1', 'duration = "100000h"', "method.duration: Input should be less than or equal to 2592000"),
        ('data_size = "4M"', 'data_size = "0"', "method.data_size: data_size must be at least 1M"),
        ('workloads = ["tr3808-4k"]', 'workloads = [{ name = "big", base = "tr3808-4k", block_size = "8M" }]',
         "load_points[0]: configuration 'a', workload 'big': 4M bytes of data shared by 1 streams leaves less "
         "than one 8M block per stream"),
        ('target = "./data/t.dat"', 'target = "iscsi://198.18.0.1:99999/iqn.2024-01.org.x:y/0"',
         "the port must be a number from 1 to 65535"),
        ('target = "./data/t.dat"', 'target = "nbd://198.18.0.1:99999"', "the port must be a number from 1 to 65535"),
        ('target = "./data/t.dat"', 'target = "lab:afp"', "unknown lab target 'lab:afp'; use one of lab:local"),
    ]
    for old, new, expect in cases:
        (scratch / "plan.toml").write_text(GOOD.replace(old, new))
        for argv in (["validate", "plan.toml"], ["run", "plan.toml", "--results", "results"]):
            line = _refused(argv, capsys, monkeypatch, scratch)
            assert expect in line, line


def test_lab_sizes_and_links_checked_before_anything(scratch, capsys, monkeypatch):
    lab = GOOD.replace('target = "./data/t.dat"', 'target = "lab:nbd"')
    cases = [
        (lab + '[lab]\npool_size = "1P"\n', "lab.pool_size: 1P does not fit the"),
        (lab + '[lab]\npool_size = "512M"\nexport_size = "1G"\n',
         "lab.pool_size: 512M is too small for 1 export(s) of 1G; set lab.pool_size to at least 1280M"),
        (lab + 'link = { mtu = 100 }\n', "configurations[0] (a).link: mtu must be between 576 and 65535"),
        (lab + 'link = { speed = "1GbE" }\n', "configurations[0] (a).link: unknown link setting(s) speed"),
    ]
    for text, expect in cases:
        (scratch / "plan.toml").write_text(text)
        line = _refused(["validate", "plan.toml", "--lab-workdir", str(scratch / "lab")], capsys, monkeypatch, scratch)
        assert expect in line, line


def test_plan_file_read_safely(scratch, capsys, monkeypatch):
    os.mkfifo(scratch / "fifo.toml")
    (scratch / "zero.toml").symlink_to("/dev/zero")
    (scratch / "dir.toml").mkdir()
    (scratch / "huge.toml").write_text(GOOD + ("# padding\n" * 500_000))
    expect = {"fifo.toml": "is not a regular file", "zero.toml": "is not a regular file",
              "dir.toml": "is a directory", "huge.toml": "is 5,000,201 bytes, more than a plan's 4 MiB"}
    for name, words in expect.items():
        for argv in (["validate", name], ["run", name, "--results", "results"]):
            line = _refused(argv, capsys, monkeypatch, scratch)
            assert f"{name}: {words}" in line, line
    (scratch / "good.toml").write_text(GOOD)
    (scratch / "link.toml").symlink_to(scratch / "good.toml")
    code, out, err = _cli(["validate", "link.toml"], capsys, monkeypatch)
    assert code == 0 and "plan 'ok' is valid" in out, err


def test_refusal_as_a_user_sees_it():
    """The real process: one line on stderr, exit 2, for a plan that would run a command."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        plan = Path(d) / "p.toml"
        plan.write_text(GOOD + 'fio = { exec_prerun = "touch /tmp/protolab-pwned" }\n')
        p = subprocess.run([sys.executable, "-m", "protolab.cli", "run", str(plan), "--results", f"{d}/r"],
                           capture_output=True, text=True, cwd=d, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "exec_prerun" in p.stderr and not Path("/tmp/protolab-pwned").exists()
        assert sorted(os.listdir(d)) == ["p.toml"]
