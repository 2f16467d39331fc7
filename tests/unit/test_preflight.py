"""The pre-flight and the safety rules, one test per rule, with an injected machine probe (no fio, no disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab.errors import PlanError, ProtolabError
from protolab.names import child_path, is_safe_name
from protolab.plan.load import load_plan_text, read_plan_text
from protolab.plan.preflight import Env, preflight
from protolab.plan.safety import check_fio_options, check_ssh_options
from protolab.plan.units import fio_seconds, parse_duration, parse_size

ENGINES = ["psync", "io_uring", "libaio", "libiscsi", "nfs", "nbd"]

PLAN = """\
name = "p"
baseline = "a"
workloads = ["tr3808-4k"]
{top}
[[configurations]]
name = "a"
target = "{target}"
{config}
[[load_points]]
streams = {streams}
{lab}"""


def _plan(target="/tmp/pl-preflight/x.dat", config="", streams=2, lab="", top=""):
    return load_plan_text(PLAN.format(target=target, config=config, streams=streams, lab=lab, top=top),
                          source="p.toml")


def _env(engines=ENGINES, free=10 * 1024**4):
    return Env(engines=lambda: engines, free_bytes=lambda p: free, lab_workdir=Path("/nonexistent/lab"))


def _refused(fn, *parts):
    with pytest.raises(ProtolabError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg
    for part in parts:
        assert part in msg, (part, msg)
    return msg


def test_valid_plan_passes():
    preflight(_plan(), "p.toml", _env())


def test_engine_not_in_this_fio():
    _refused(lambda: preflight(_plan(config='ioengine = "libaio"'), "p.toml", _env(engines=["psync"])),
             "configuration 'a'", "fio engine 'libaio' is not in this fio")
    _refused(lambda: preflight(_plan(target="nbd://127.0.0.1:10809"), "p.toml", _env(engines=["psync"])),
             "'nbd'")


def test_pool_must_fit_the_free_disk():
    plan = _plan(target="lab:nbd", lab='[lab]\nprefix = "pft"\npool_size = "20G"\n')
    _refused(lambda: preflight(plan, "p.toml", _env(free=10 * 1024**3)), "lab.pool_size 20G does not fit")
    preflight(plan, "p.toml", _env(free=30 * 1024**3))


def test_exports_must_fit_the_pool():
    plan = _plan(target="lab:nbd", lab='[lab]\nprefix = "pft"\npool_size = "512M"\nexport_size = "1G"\n')
    _refused(lambda: preflight(plan, "p.toml", _env()), "lab.pool_size 512M is too small")


@pytest.mark.parametrize("link,part", [("{ mtu = 100 }", "mtu must be between"), ("{ jitter = 1 }", "jitter"),
                                       ('{ rate = "fast" }', "rate"), ('{ mtu = "9000" }', "mtu")])
def test_configuration_link_merged_and_checked(link, part):
    plan = _plan(target="lab:nbd", config=f"link = {link}", lab='[lab]\nprefix = "pft"\n')
    _refused(lambda: preflight(plan, "p.toml", _env()), "configurations[0].link", part)


def test_lab_rules_moved_from_the_runner():
    _refused(lambda: preflight(_plan(top="\n[method]\nrestore = true\n"), "p.toml", _env()), "method.restore")
    plan = _plan(target="lab:nbd", streams="1\nhosts = 3", lab='[lab]\nprefix = "pft"\nhosts = 2\n')
    _refused(lambda: preflight(plan, "p.toml", _env()), "asks for 3 hosts but the lab has 2")
    _refused(lambda: preflight(_plan(target="lab:smb", lab='[lab]\nprefix = "pft"\n'), "p.toml", _env()),
             "unknown lab protocol 'smb'")


def test_stream_region_holds_a_block():
    plan = _plan(top='\n[method]\ndata_size = "1M"\n', streams=1000)
    _refused(lambda: preflight(plan, "p.toml", _env()), "1000 streams", "4096-byte block")


@pytest.mark.parametrize("url,part", [
    ("iscsi://127.0.0.1:99999/iqn.2024-01.x:y/1", "port"), ("iscsi://127.0.0.1/iqn.2024-01.x:y", "LUN"),
    ("iscsi://127.0.0.1//1", "IQN"), ("nbd://127.0.0.1:0", "port"), ("nfs://127.0.0.1/", "export"),
    ("nbd://user:pw@127.0.0.1", "user"), ("gopher://x/y", "unknown scheme"),
])
def test_target_urls_parsed_in_full(url, part):
    _refused(lambda: preflight(_plan(target=url), "p.toml", _env()), "configuration 'a'", part)


def test_unknown_target_name_names_the_closest():
    text = PLAN.format(target="nvme-typo", config="", streams=1, lab="",
                       top='\n[targets]\nnvme = { url = "/tmp/pl-preflight/n.dat" }\n')
    _refused(lambda: load_plan_text(text, source="p.toml"), "target 'nvme-typo'", "did you mean 'nvme'")


def test_interface_names_fit():
    from protolab.plan.preflight import IFNAME_MAX, _interface_names

    plan = _plan(target="lab:nbd", lab='[lab]\nprefix = "abcdef"\nhosts = 200\nnics_per_host = 8\nstorage_ports = 8\n')
    names = _interface_names(plan.lab)
    assert names and max(map(len, names)) <= IFNAME_MAX


@pytest.mark.parametrize("opts", [{"iodepth_batch_submit": 8}, {"hipri": True}, {"random_generator": "lfsr"},
                                  {"iodepth_low": 1, "norandommap": 1, "randrepeat": False}])
def test_allowed_fio_options(opts):
    assert check_fio_options(opts) == opts


@pytest.mark.parametrize("key,instead", [("exec_prerun", "runs a command"), ("filename", "target"),
                                         ("allow_file_create", "target"), ("write_iolog", "log"),
                                         ("write_bw_log", "log"), ("rw", "read_pct"), ("bs", "block_size"),
                                         ("ioscheduler", "changes the system"), ("ioengine", "ioengine"),
                                         ("numjobs", "streams"), ("nosuch", "a plan may set only")])
def test_refused_fio_options_name_the_field_to_use(key, instead):
    with pytest.raises(ValueError, match=instead):
        check_fio_options({key: 1})


@pytest.mark.parametrize("opts", [["-F", "/root/.ssh/cfg"], ["-i", "/k", "-p", "22"], ["-o", "User=root"],
                                  ["-oStrictHostKeyChecking=no"], ["-4", "-q"]])
def test_allowed_ssh_options(opts):
    assert check_ssh_options(opts) == opts


@pytest.mark.parametrize("opts", [["-o", "ProxyCommand=id"], ["-oProxyCommand id"], ["-o", "LocalCommand=id"],
                                  ["-o", "PermitLocalCommand yes"], ["-o", "KnownHostsCommand=/bin/id"],
                                  ["-o", "Match exec id"], ["-J", "x"], ["-p", "99999"], ["-F"],
                                  ["-i", "-oProxyCommand=id"], ["-o", "User=a\nProxyCommand=id"]])
def test_refused_ssh_options(opts):
    with pytest.raises(ValueError):
        check_ssh_options(opts)


def test_child_path_cannot_leave(tmp_path):
    assert child_path(tmp_path, "w__a__h1s1q4__r1.measure.h1.fio") == tmp_path / "w__a__h1s1q4__r1.measure.h1.fio"
    for bad in ["../x", "..", ".", "a/b", "/etc/passwd", "a\nb", "", ".hidden"]:
        with pytest.raises(ValueError):
            child_path(tmp_path, bad)
    assert is_safe_name("tr3808-4k") and not is_safe_name("../x") and not is_safe_name("w" * 65)


def test_strict_types_and_bounds():
    assert parse_size("4k") == 4096 and parse_duration("30s") == 30.0
    for bad in [True, 1.5, "1e9", "99999999P"]:
        with pytest.raises(ValueError):
            parse_size(bad)
    for bad in [True, float("nan"), float("inf"), "100000h", 0.0001]:
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_fio_seconds_always_integers():
    assert fio_seconds(86400) == "86400" and fio_seconds(1.5) == "1500ms" and fio_seconds(3.6e5) == "360000"


def test_job_file_refuses_control_characters():
    from protolab.engine.jobfile import _section

    with pytest.raises(ValueError):
        _section("global", {"ioengine": "psync\nexec_prerun=id"})


def test_plan_file_read_safely(tmp_path):
    import os

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    _refused(lambda: read_plan_text(fifo), "not a regular file")
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    _refused(lambda: read_plan_text(zero), "not a regular file")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (4 * 1024**2 + 1))
    _refused(lambda: read_plan_text(big), "MiB")
    ok = tmp_path / "ok.toml"
    ok.write_text('name = "x"\n')
    assert read_plan_text(ok) == 'name = "x"\n'


def test_preflight_errors_are_plan_errors():
    with pytest.raises(PlanError):
        preflight(_plan(top="\n[method]\nrestore = true\n"), "p.toml", _env())
