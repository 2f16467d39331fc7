"""`[method] verify` in a plan (plan.verify): its values, the interval every write divides into, one-line refusals
naming the field, and fio's own verify options refused in a configuration's `fio` table, pointing at method.verify."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.load import load_plan_text
from protolab.plan.safety import VERIFY_OPTIONS, check_fio_options
from protolab.plan.verify import ALGORITHMS, verification

PLAN = """name = "v"
baseline = "a"
{workloads}
load_points = [{{ streams = 2, oio = 4 }}]
[method]
repeats = 3
data_size = "64M"
{method}
[[configurations]]
name = "a"
target = "/var/tmp/protolab-unit/v.dat"
{more}"""
WRITES = 'workloads = [{ name = "w", block_size = { "8k" = 1, "12k" = 1 }, read_pct = 70, random_pct = 100 }]'


def _plan(method: str = 'verify = "crc32c"', workloads: str = WRITES, more: str = ""):
    return load_plan_text(PLAN.format(method=method, workloads=workloads, more=more), source="p.toml")


def test_no_verify_by_default_and_each_algorithm_is_taken():
    assert _plan("").method.verify is None and verification(_plan("")) is None
    for alg in ALGORITHMS:
        assert _plan(f'verify = "{alg}"').method.verify == alg


def test_the_interval_is_what_every_write_divides_into():
    v = verification(_plan())
    assert (v.algorithm, v.interval) == ("crc32c", 4096)  # 8k and 12k writes, the prepare's 1M
    assert v.summary() == "crc32c per 4k"
    odd = 'workloads = [{ name = "w", block_size = "1536", read_pct = 0, random_pct = 0 }]'
    assert verification(_plan(workloads=odd)).interval == 512
    # a workload that only reads writes nothing: it leaves the interval alone
    two = ('workloads = [{ name = "w", block_size = "64k", read_pct = 0, random_pct = 0 }, '
           '{ name = "r", block_size = "1536", read_pct = 100, random_pct = 100 }]')
    assert verification(_plan(workloads=two)).interval == 64 * 1024


@pytest.mark.parametrize("method, workloads, said", [
    ('verify = "crc64"', WRITES, "p.toml:8: method.verify: Input should be 'crc32c', 'md5' or 'sha256'"),
    ("verify = true", WRITES, "p.toml:8: method.verify: Input should be 'crc32c', 'md5' or 'sha256'"),
    ('verify = "md5"', 'workloads = [{ name = "r", block_size = "4k", read_pct = 100, random_pct = 100 }]',
     "p.toml: method.verify: no workload of the plan writes"),
    ('verify = "md5"\nprepare = false', WRITES, "p.toml: method.verify needs every block of the data written with "
     "its checksum before the first cell: set method.prepare = true"),
])
def test_a_bad_verify_is_one_line_naming_the_field(method, workloads, said):
    with pytest.raises(PlanError) as e:
        _plan(method, workloads)
    assert str(e.value).startswith(said) and "\n" not in str(e.value)


@pytest.mark.parametrize("key", VERIFY_OPTIONS)
def test_fio_verify_options_are_refused_and_point_at_method_verify(key):
    with pytest.raises(ValueError) as e:
        check_fio_options({key: 1})
    assert f"fio option {key!r} is not allowed in a plan; set method.verify" in str(e.value)


def test_a_configuration_setting_fio_verify_is_one_line_naming_it():
    with pytest.raises(PlanError) as e:
        _plan("", more='fio = { verify = "crc32c" }')
    msg = str(e.value)
    assert msg.startswith("p.toml:") and "configurations[0].fio" in msg and "set method.verify" in msg
    assert "\n" not in msg


def test_the_cli_refuses_it_with_exit_code_2(tmp_path, capsys, monkeypatch):
    import sys

    import protolab.cli as cli

    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(method='verify = "sha1"', workloads=WRITES, more=""))
    monkeypatch.setattr(sys, "argv", ["protolab", "validate", str(plan)])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as e:
        cli.main()
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.strip() == (f"protolab: error: {plan}:8: method.verify: Input should be 'crc32c', 'md5' or 'sha256' "
                           "(got 'sha1')")


def test_a_stored_plan_keeps_verify_and_one_without_it_is_stored_as_before():
    from protolab.plan.model import Plan

    assert "verify" not in _plan("").model_dump(mode="json")["method"]  # runs stored before verify existed match
    stored = _plan('verify = "md5"').model_dump(mode="json")
    assert stored["method"]["verify"] == "md5" and Plan.model_validate(stored).method.verify == "md5"
