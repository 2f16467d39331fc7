"""Each attack from issue 9, through the real CLI (`validate` and `run`): one-line refusal, exit 2, and no file
appeared, changed or vanished — neither in the working folder nor where the attack pointed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

PLAN = """\
name = "attack"
baseline = "a"
workloads = [{workload}]

[[configurations]]
name = "a"
target = "./disk.dat"
{config}

[[load_points]]
streams = 1
oio = 2

[method]
duration = "1s"
warmup = 0
repeats = 1
prepare = false
{hosts}"""


def _plan(workload='"tr3808-4k"', config="", hosts="") -> str:
    return PLAN.format(workload=workload, config=config, hosts=hosts)


def _attacks(tmp: Path) -> dict[str, tuple[str, str]]:
    mark, victim, log = tmp / "ran-a-command", tmp / "victim.dat", tmp / "elsewhere.log"
    return {
        "command run": (_plan(config=f'fio = {{ exec_prerun = "touch {mark}" }}'), "exec_prerun"),
        "file overwritten": (_plan(config=f'fio = {{ filename = "{victim}" }}'), "filename"),
        "file deleted": (_plan(workload='{ name = "w", base = "tr3808-4k", read_pct = 0 }',
                               config=f'fio = {{ allow_file_create = 0, filename = "{victim}" }}'),
                         "allow_file_create"),
        "iolog elsewhere": (_plan(config=f'fio = {{ write_iolog = "{log}" }}'), "write_iolog"),
        "bw log elsewhere": (_plan(config=f'fio = {{ write_bw_log = "{log}" }}'), "write_bw_log"),
        "newline in ioengine": (_plan(config=f'ioengine = "psync\\nexec_prerun=touch {mark}"'), "ioengine"),
        "newline in fio value": (_plan(config=f'fio = {{ hipri = "1\\nexec_prerun=touch {mark}" }}'), "hipri"),
        "newline in workload name": (_plan(workload=f'{{ name = "w\\nexec_prerun=touch {mark}", base = "tr3808-4k" }}'),
                                     "workloads[0].name"),
        "name traversal": (_plan(workload=f'{{ name = "../../../..{tmp}/escape", base = "tr3808-4k" }}'),
                           "workloads[0].name"),
        "ProxyCommand": (_plan(hosts=f'[[hosts]]\nname = "h1"\nagent = "ssh://127.0.0.1"\n'
                                     f'ssh_options = ["-o", "ProxyCommand=touch {mark}"]\n'), "ProxyCommand"),
        "colon in a path target": (_plan(workload='{ name = "w", base = "tr3808-4k", read_pct = 0 }')
                                   .replace('target = "./disk.dat"', f'target = "./disk.dat:{victim}"'),
                                   "must not contain ':'"),
        "target typo": (_plan(config="").replace('target = "./disk.dat"', 'target = "nvme-typo"')
                        .replace('[[configurations]]', '[targets]\nnvme = { url = "./nvme.dat" }\n\n[[configurations]]'),
                        "did you mean 'nvme'"),
    }


def _state(root: Path) -> dict[str, str]:  # FIFOs are not read
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "other")
            for p in root.rglob("*")}


@pytest.mark.parametrize("attack", sorted(_attacks(Path("/x"))))
def test_attack_refused_nothing_touched(attack, tmp_path, cli):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "victim.dat").write_bytes(b"precious data\n" * 100)
    text, expected = _attacks(tmp_path)[attack]
    plan = work / "plan.toml"
    plan.write_text(text)
    before = _state(tmp_path)
    for command in ("validate", "run"):
        p = cli(command, plan, cwd=work, timeout=120)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"protolab: error: {plan}"), p.stderr
        assert "Traceback" not in p.stdout + p.stderr
        assert expected in lines[0], (expected, lines[0])
        assert _state(tmp_path) == before, f"{command}: files changed"
    assert not Path(f"{tmp_path}/escape").exists()


def test_allowed_fio_options_reach_the_job_file(tmp_path, cli, fio_path):
    """The allow-list lets engine tuning through (and the run measures with it)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(_plan(config='ioengine = "psync"\nfio = { randrepeat = false, random_generator = "tausworthe64" }'))
    p = cli("validate", plan, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    p = cli("run", plan, "--results", tmp_path / "results", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    jobs = list((tmp_path / "results").rglob("*.measure.*.fio"))
    assert jobs, list((tmp_path / "results").rglob("*"))
    text = jobs[0].read_text()
    # runtime: warm-up (none) + the window (1 s) + 10 s to spare (fio is stopped at the window's end)
    assert "random_generator=tausworthe64" in text and "randrepeat=0" in text and "runtime=11\n" in text


def test_validate_makes_runs_overwrite_check(tmp_path, cli):
    """A non-empty file protolab did not create: validate refuses it as run does, and it stays as it was."""
    data = tmp_path / "data.dat"
    data.write_text("precious\n")
    plan = tmp_path / "plan.toml"
    plan.write_text(_plan().replace('"./disk.dat"', f'"{data}"'))
    lines = []
    for command in ("validate", "run"):
        p = cli(command, plan, cwd=tmp_path, timeout=120)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "non-empty file protolab did not create" in p.stderr
        lines.append(p.stderr)
    assert lines[0] == lines[1]
    assert data.read_text() == "precious\n" and sorted(x.name for x in tmp_path.iterdir()) == ["data.dat", "plan.toml"]


@pytest.mark.parametrize("kind", ["chardev", "fifo"])
def test_target_that_is_no_file_directory_or_block_device(kind, tmp_path, cli):
    """A character device (/dev/mem where it exists) or a FIFO has no contents to check: refused by both commands."""
    import os

    target = "/dev/null"
    if kind == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    plan = tmp_path / "plan.toml"
    plan.write_text(_plan().replace('"./disk.dat"', f'"{target}"'))
    before = _state(tmp_path)
    for command in ("validate", "run"):
        p = cli(command, plan, cwd=tmp_path, timeout=120)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "is not a regular file, directory or block device" in p.stderr
        assert _state(tmp_path) == before
