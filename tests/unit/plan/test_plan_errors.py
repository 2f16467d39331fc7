"""Bad plans: one line naming the file, the line or field, and what to do; exit code 2; no traceback."""

from __future__ import annotations

import pytest

GOOD = """\
name = "t"
baseline = "a"
workloads = ["tr3808-4k"]

[[configurations]]
name = "a"
target = "/tmp/x.dat"

[[configurations]]
name = "b"
target = "/tmp/x.dat"
ioengine = "psync"

[[load_points]]
streams = 2
oio = 4
"""

CASES = {
    # name: (plan text, substrings the one error line must contain)
    "unknown field": (GOOD.replace('ioengine = "psync"', 'ioengine = "psync"\nqueue_dept = 4'),
                      [":13:", "configurations[1].queue_dept", "unknown field", "remove it or check its spelling"]),
    "wrong type": (GOOD.replace("streams = 2", 'streams = "two"'),
                   [":15:", "load_points[0].streams", "integer", "'two'", "write a whole number"]),
    "zero oio": (GOOD.replace("oio = 4", "oio = 0"),
                 [":16:", "load_points[0].oio", "greater than or equal to 1", "got 0"]),
    "negative oio": (GOOD.replace("oio = 4", "oio = -3"),
                     ["load_points[0].oio", "greater than or equal to 1", "got -3"]),
    "workload oio zero": (GOOD.replace('workloads = ["tr3808-4k"]', 'workloads = [{ name = "tr3808-4k", oio = 0 }]'),
                          ["workloads[0].oio", "greater than or equal to 1"]),
    "read pct above 100": (GOOD.replace('workloads = ["tr3808-4k"]', 'workloads = [{ name = "tr3808-4k", read_pct = 120 }]'),
                           [":3:", "workloads[0].read_pct", "less than or equal to 100", "got 120"]),
    "read pct below 0": (GOOD.replace('workloads = ["tr3808-4k"]', 'workloads = [{ name = "w", base = "tr3808-4k", read_pct = -1 }]'),
                         ["workloads[0].read_pct", "greater than or equal to 0"]),
    "unknown workload": (GOOD.replace("tr3808-4k", "tr3808-5k"),
                         [":3:", "workloads[0]", "unknown workload 'tr3808-5k'", "protolab workloads"]),
    "missing baseline": (GOOD.replace('baseline = "a"\n', ""),
                         ["baseline: missing", 'add baseline = "<configuration name>"', "a, b"]),
    "unknown baseline": (GOOD.replace('baseline = "a"', 'baseline = "fc"'),
                         ["baseline 'fc' is not a configuration", "choose one of: a, b"]),
    "cpu limit on a path": (GOOD.replace('ioengine = "psync"', 'ioengine = "psync"\ncpu_limit = { servers = 0.5 }'),
                            ["configurations b: cpu_limit caps the CPU of the embedded lab", "remove cpu_limit"]),
    "cpu limit of no role": (GOOD.replace('ioengine = "psync"', 'ioengine = "psync"\ncpu_limit = { array = 0.5 }'),
                             ["configurations[1].cpu_limit", "array", "servers", "loadgen"]),
    "cpu limit zero": (GOOD.replace('ioengine = "psync"', 'ioengine = "psync"\ncpu_limit = { servers = 0 }'),
                       ["configurations[1].cpu_limit.servers", "greater than 0"]),
    "invalid toml": (GOOD.replace('name = "a"', 'name = "a'),
                     ["invalid TOML", "line 6", "fix the syntax"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_plan_is_one_line_exit_2(case, tmp_path, cli):
    text, expected = CASES[case]
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    for command in ("validate", "run"):
        p = cli(command, plan, cwd=tmp_path, timeout=60)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert "Traceback" not in p.stderr + p.stdout
        line = lines[0]
        assert line.startswith(f"protolab: error: {plan}"), line
        for part in expected:
            assert part in line, (part, line)
    assert not (tmp_path / "results").exists()  # nothing was started


def test_good_plan_validates(tmp_path, cli):
    plan = tmp_path / "plan.toml"
    # validate makes run's overwrite check too: a target nobody else writes (/tmp/x.dat may hold data)
    plan.write_text(GOOD.replace("/tmp/x.dat", str(tmp_path / "x.dat")))
    p = cli("validate", plan, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "2 configurations × 1 workloads × 1 load points × 5 repeats = 10 cells" in p.stdout


@pytest.mark.parametrize("kind", ["missing", "directory", "binary"])
def test_unreadable_plan_file(kind, tmp_path, cli):
    plan = tmp_path / "plan.toml"
    if kind == "directory":
        plan.mkdir()
    elif kind == "binary":
        plan.write_bytes(b"\xff\xfe\x00bad")
    p = cli("run", plan, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"protolab: error: {plan}: "), p.stderr
    assert {"missing": "no such plan file", "directory": "is a directory",
            "binary": "not a UTF-8 text file"}[kind] in lines[0]


def test_unreadable_plan_as_other_user(tmp_path):
    """Root reads any file, so drop to 'nobody' to see the permission error."""
    import os
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("needs root to switch user")
    plan = tmp_path / "plan.toml"
    plan.write_text(GOOD)
    plan.chmod(0o600)
    tmp_path.chmod(0o755)
    code = ("import sys; from protolab.cli import main; sys.argv=['protolab','run',%r]; main()" % str(plan))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, user="nobody",
                       env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == f"protolab: error: {plan}: cannot read the plan (Permission denied); check its permissions"


def test_unknown_builtin(cli):
    p = cli("run", "--builtin", "nope", timeout=60)
    assert p.returncode == 2
    assert "no such built-in study; choose one of: array-speed, demo" in p.stderr
