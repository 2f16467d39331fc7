"""Property tests (complementing test_plan_property.py with same-type boundary mutations): plans mutated from valid ones (built-in studies, README examples) — every field, type and
boundary. Every failure is protolab's own one-line error; `validate`'s pre-flight and `run`'s agree; a refused
plan creates nothing."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, docs_text
from fakes import FakeFio
from protolab.errors import ProtolabError
from protolab.plan.library import builtin_studies
from protolab.plan.load import load_plan_data
from protolab.plan.preflight import Environment, _free_bytes, preflight
from protolab.proc import Completed

ROOT = ROOT
FIO_ENGINES = ["sync", "psync", "vsync", "pvsync", "pvsync2", "null", "posixaio", "mmap", "io_uring",
               "libaio", "libiscsi", "nfs", "nbd", "exec", "filedelete", "net"]


def _seeds() -> list[dict]:
    texts = list(builtin_studies().values())
    readme = docs_text()
    # the README's and docs' whole plans (they set a baseline), not its fragments
    texts += [t for t in re.findall(r"```toml\n(.*?)```", readme, re.S) if re.search(r"^baseline\s*=", t, re.M)]
    out = [tomllib.loads(t) for t in texts]
    assert len(out) >= 3
    return out


SEEDS = _seeds()


class FakeRunner:
    """blkid finds nothing; every other program 'succeeds' silently (nothing runs in these tests)."""

    def run(self, args, check=True, **kw):
        return Completed(tuple(args), 2 if args and args[0] == "blkid" else 0, "", "")


def _env(tmp: Path) -> Environment:
    return Environment(fio_engines=frozenset(FIO_ENGINES), free_bytes=_free_bytes, lab_workdir=tmp / "lab")


HOSTILE_VALUES = st.one_of(
    st.sampled_from([0, -1, 1, 3, 511, 512, 4096, 65535, 65536, 99999, 2**31, 2**63, 10**30, 1000000000]),
    st.sampled_from([0.0, -0.0, 0.5, 1e-9, 1e300, float("inf"), float("-inf"), float("nan"), 100.5, 3.0]),
    st.booleans(),
    st.sampled_from(["", "0", "3", "yes", "true", "4k", "1P", "0.5k", "100000h", "1e9", "30s", "-5s", "../x",
                     "../../../../tmp/escape", "a/b", ".hidden", "a\nb", "w" * 65, "lab:afp", "lab:nbd",
                     "iscsi://127.0.0.1:99999/iqn.2024-01.x:y/1", "iscsi://h/iqn.x", "nfs://h", "nbd://h:0",
                     "http://x/y", "nvme-typo", "./here.dat", "ssh://-oProxyCommand=id", "external:/x.so",
                     "exec", "ProxyCommand=id", "tr3808-4k", "tr3808-init", "9000", "none"]),
    st.text(max_size=12),
    st.just(None),
    st.lists(st.sampled_from([0, 1, "a", "-o", "ProxyCommand=id", "-F"]), max_size=3),
    st.dictionaries(st.sampled_from(["mtu", "exec_prerun", "filename", "hipri", "x", "4k", "name", "url"]),
                    st.sampled_from([1, 100, "a", True, "/tmp/x", 9000]), max_size=2),
)


def _paths(obj, prefix=()):
    """Every (container, key) path in a parsed plan."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _near(draw, value):
    """A value of the same type at or near a boundary (the mutations most likely to slip through)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return draw(st.sampled_from([0, 1, 2, value - 1, value + 1, value * 2, value * 1000, 255, 256, 4096,
                                     32768, 32769, 65535, 65536, 2**32, -value]))
    if isinstance(value, float):
        return draw(st.sampled_from([0.0, 0.001, 0.5, value / 2, value * 1000, 99.99, 100.0, 100.01, 86400.0,
                                     86400.5, -value]))
    if isinstance(value, str):
        return draw(st.sampled_from([value + "x", value[:-1], value.upper(), value + "/", "./" + value, value * 3,
                                     value.replace("k", "P"), value.replace("s", "h"), value + "0", value + "\t"]))
    return draw(HOSTILE_VALUES)


@st.composite
def mutated_plans(draw):
    plan = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(plan))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = plan
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["near", "near", "near", "replace", "replace", "delete", "extra"]))
        if action == "near":
            parent[path[-1]] = _near(draw, parent[path[-1]])
        elif action == "delete":
            del parent[path[-1]]
        elif action == "extra" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["queue_dept", "fio", "lab", "link", "exec"]))] = draw(HOSTILE_VALUES)
        else:
            parent[path[-1]] = draw(HOSTILE_VALUES)
    return plan


def test_seeds_validate_and_run_reaches_creation(tmp_path):
    """The unmutated seeds are valid: the property tests start from plans that pass."""
    for data in SEEDS:
        plan, error = _validate(copy.deepcopy(data), _env(tmp_path))
        assert error is None, error


def _validate(data: dict, env: Environment):
    """What `validate` does after reading TOML: load, then the pre-flight. Returns the plan or the error text."""
    try:
        plan = load_plan_data(data, source="p.toml")
        preflight(plan, "p.toml", env)
        return plan, None
    except ProtolabError as e:
        return None, str(e)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated_plans())
def test_mutated_plans_fail_cleanly_and_validate_agrees_with_run(data, tmp_path_factory):
    import protolab.run.session as runner_mod
    from protolab.run import Study

    tmp = tmp_path_factory.mktemp("prop")
    env = _env(tmp)
    plan, error = _validate(data, env)
    if error is not None:
        assert "\n" not in error and error.strip(), repr(error)
        return
    # run: its pre-flight must pass too, and it must get as far as creating the run directory
    class Reached(Exception):
        pass

    def create(*a, **k):
        raise Reached()

    orig = runner_mod.RunDir.create
    runner_mod.RunDir.create = create
    try:
        study = Study(plan, "", "p.toml", results_root=tmp / "results", fio=FakeFio(engines=FIO_ENGINES), runner=FakeRunner(),
                      lab_workdir=tmp / "lab")
        with pytest.raises(Reached):
            study.run()
    finally:
        runner_mod.RunDir.create = orig
    assert not (tmp / "results").exists()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated_plans())
def test_refused_plans_refused_by_run_and_create_nothing(data, tmp_path_factory):
    """Plans whose model loads but whose pre-flight refuses: run refuses with the same line, creating nothing."""
    from protolab.run import Study

    tmp = tmp_path_factory.mktemp("prop")
    try:
        plan = load_plan_data(data, source="p.toml")
    except ProtolabError:
        return
    try:
        preflight(plan, "p.toml", _env(tmp))
        return
    except ProtolabError as e:
        expected = str(e)
    study = Study(plan, "", "p.toml", results_root=tmp / "results", fio=FakeFio(engines=FIO_ENGINES), runner=FakeRunner(),
                  lab_workdir=tmp / "lab")
    with pytest.raises(ProtolabError) as got:
        study.run()
    assert str(got.value) == expected
    assert list(tmp.iterdir()) == []
