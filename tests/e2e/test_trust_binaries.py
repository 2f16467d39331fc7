"""protolab (as root) runs only programs root controls: never a fio or guest image from the working directory."""

from __future__ import annotations

import os
import stat

from conftest import as_nobody, run_cli

PLAN = """
name = "p"
baseline = "a"
workloads = ["tr3808-4k"]
[targets.t]
url = "{dir}"
[[configurations]]
name = "a"
target = "t"
ioengine = "psync"
[[load_points]]
streams = 1
oio = 1
[method]
warmup = "1s"
duration = "1s"
repeats = 1
data_size = "8M"
"""


def _plant(evil, marker):
    """As nobody: ./.deps/fio/bin/fio and ./.deps/guest/* that would touch ``marker`` if run."""
    as_nobody("mkdir", "-p", evil / ".deps/fio/bin", evil / ".deps/guest", evil / "data")
    script = evil / ".deps/fio/bin/fio"
    as_nobody("sh", "-c", f"printf '#!/bin/sh\\ntouch {marker}\\necho fio-3.33\\n' > {script}; chmod 755 {script}")
    for name in ("vmlinuz", "initramfs.cpio.gz", "guest.json"):
        as_nobody("sh", "-c", f"echo '{{}}' > {evil / '.deps/guest' / name}")
    as_nobody("sh", "-c", f"cat > {evil / 'p.toml'} <<'X'\n{PLAN.format(dir=evil / 'data')}X")


def test_a_planted_fio_in_the_working_directory_is_never_run(attacker_dir):
    evil, marker = attacker_dir, attacker_dir / "RAN-AS-ROOT"
    _plant(evil, marker)
    env = {k: v for k, v in os.environ.items() if k not in ("PROTOLAB_FIO", "PROTOLAB_GUEST")}
    for args in (("validate", "p.toml"), ("doctor",)):
        p = run_cli(*args, cwd=evil, env=env, timeout=120)
        assert not marker.exists(), f"protolab {args[0]} ran the planted fio"
        assert "Traceback" not in p.stderr
    p = run_cli("doctor", cwd=evil, env=env, timeout=120)
    assert str(evil) not in p.stdout  # neither the planted fio nor the planted guest image is named as found
    assert not marker.exists()


def test_protolab_fio_must_be_absolute_and_owned_by_root(attacker_dir, tmp_path):
    evil = attacker_dir
    plan = tmp_path / "p.toml"
    (tmp_path / "data").mkdir()
    plan.write_text(PLAN.format(dir=tmp_path / "data"))
    p = run_cli("validate", plan, env={"PROTOLAB_FIO": "fio"})
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "PROTOLAB_FIO fio: give an absolute path" in p.stderr
    marker = evil / "RAN"
    as_nobody("sh", "-c", f"printf '#!/bin/sh\\ntouch {marker}\\n' > {evil}/fio; chmod 755 {evil}/fio")
    p = run_cli("validate", plan, env={"PROTOLAB_FIO": str(evil / "fio")})
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert f"PROTOLAB_FIO {evil}/fio: {evil} is owned by uid 65534, not root" in p.stderr
    os.chown(evil, 0, 0)  # the directory is root's now, the file still nobody's
    p = run_cli("validate", plan, env={"PROTOLAB_FIO": str(evil / "fio")})
    assert f"PROTOLAB_FIO {evil}/fio can be changed by a user other than root (owner uid 65534" in p.stderr
    assert not marker.exists()
    # root's own copy in a directory nobody can write is fine
    from protolab.engine.fio import find_fio

    real, _ = find_fio()
    mine = tmp_path / "bin"
    mine.mkdir()
    (mine / "fio").symlink_to(real)
    p = run_cli("validate", plan, env={"PROTOLAB_FIO": str(mine / "fio")})
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(real).st_mode) & 0o022 == 0
