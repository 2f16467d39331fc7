"""Rule-by-rule checks of the allow-lists and bounds (complementing test_plan_safety.py's CLI-level tests)."""

from __future__ import annotations

import pytest

from protolab.plan.safety import check_engine, check_fio_options, check_ssh_options
from protolab.plan.target_grammar import parse_target
from protolab.plan.units import parse_duration, parse_size
from protolab.safepath import inside


@pytest.mark.parametrize("opts", [{"iodepth_batch_submit": 8}, {"hipri": True}, {"random_generator": "lfsr"},
                                  {"iodepth_low": 1, "norandommap": 1, "randrepeat": False}])
def test_allowed_fio_options(opts):
    assert set(check_fio_options(opts)) == set(opts)


@pytest.mark.parametrize("key", ["exec_prerun", "exec_postrun", "filename", "directory", "allow_file_create",
                                 "unlink", "write_iolog", "read_iolog", "write_bw_log", "write_lat_log", "output",
                                 "rw", "bs", "size", "offset", "ioscheduler", "cpus_allowed", "trigger_cmd",
                                 "iomem", "ioengine", "numjobs", "runtime", "nosuch", "filename_format",
                                 "lockfile", "verify_state_save", "cgroup", "uid", "daemonize"])
def test_refused_fio_options(key):
    with pytest.raises(ValueError, match=key):
        check_fio_options({key: 1})


@pytest.mark.parametrize("value", ["1\nexec_prerun=id", "/tmp/x", "a b", "x" * 65, [1], {"a": 1}, float("nan")])
def test_refused_fio_values(value):
    with pytest.raises(ValueError):
        check_fio_options({"hipri": value})


@pytest.mark.parametrize("engine", ["exec", "filedelete", "filecreate", "ftruncate", "net", "external:/x.so",
                                    "psync\nexec_prerun=id", "", 3])
def test_refused_engines(engine):
    with pytest.raises(ValueError):
        check_engine(engine)


@pytest.mark.parametrize("engine", ["io_uring", "libaio", "psync", "pvsync2", "posixaio"])
def test_allowed_engines(engine):
    assert check_engine(engine) == engine


@pytest.mark.parametrize("opts", [["-p", "22"], ["-o", "User=root"], ["-oConnectTimeout=5"],
                                  ["-o", "ServerAliveInterval=10", "-o", "BatchMode=yes"]])
def test_allowed_ssh_options(opts):
    assert "".join(check_ssh_options(opts)) == "".join(opts)


def test_the_ssh_options_help_lists_only_what_a_plan_may_give(monkeypatch, tmp_path):
    """The text `ssh_options` shows (schema, docs) names each flag a plan may give, and no flag it refuses."""
    import re

    import protolab.plan.safety as safety
    from protolab.plan.hosts import LoadHost

    monkeypatch.setattr(safety, "ssh_home", lambda: str(tmp_path / ".ssh"))
    text = LoadHost.model_fields["ssh_options"].description
    example = {"PORT": "22", "KEY": "k", "FILE": "k", "KEY=VALUE": "ConnectTimeout=5"}
    shown = re.findall(r"(-[A-Za-z]) ([A-Z=]+)", text)
    assert {f for f, _ in shown} == {"-p", "-i", "-o"}, text
    for flag, what in shown:
        check_ssh_options([flag, example[what]])


def test_an_identity_is_a_key_in_the_invoking_users_ssh_directory(monkeypatch, tmp_path):
    import protolab.plan.safety as safety

    home = tmp_path / "home" / ".ssh"
    monkeypatch.setattr(safety, "ssh_home", lambda: str(home))
    assert check_ssh_options(["-i", "lab_key", "-p", "22"]) == ["-i", str(home / "lab_key"), "-p", "22"]
    assert check_ssh_options(["-i", "~/.ssh/lab_key"]) == ["-i", str(home / "lab_key")]
    assert check_ssh_options([f"-i{home}/k"]) == ["-i", str(home / "k")]
    home.mkdir(parents=True)
    (home / "link").symlink_to("/etc/shadow")
    for bad in ("/etc/shadow", "../x", "~/../../etc/shadow", "link", str(home)):
        with pytest.raises(ValueError, match="is not a key under"):
            check_ssh_options(["-i", bad])


@pytest.mark.parametrize("opts", [["-o", "ProxyCommand=id"], ["-oProxyCommand id"], ["-o", "LocalCommand=id"],
                                  ["-o", "PermitLocalCommand yes"], ["-o", "KnownHostsCommand=/bin/id"],
                                  ["-o", "Match exec id"], ["-o", "ProxyJump=evil"], ["-J", "x"], ["-p", "99999"],
                                  ["-F"], ["-i", "-oProxyCommand=id"], ["-o", "User=a\nProxyCommand=id"],
                                  ["-o", "Include=/tmp/x"], ["-W", "h:22"], ["-L", "1:h:2"],
                                  ["-F", "/root/.ssh/cfg"], ["-F/root/.ssh/cfg"], ["-o", "StrictHostKeyChecking=no"],
                                  ["-o", "UserKnownHostsFile=/root/.ssh/authorized_keys"], ["-o", "HostKeyAlias=x"],
                                  ["-o", "GlobalKnownHostsFile=/x"], ["-o", "UpdateHostKeys=yes"],
                                  ["-o", "IdentityFile=/etc/shadow"], ["-o", "CertificateFile=/x"],
                                  ["-o", "ControlPath=/x"], ["-o", "HashKnownHosts=no"], ["-o", "CheckHostIP=yes"]])
def test_refused_ssh_options(opts):
    with pytest.raises(ValueError):
        check_ssh_options(opts)


@pytest.mark.parametrize("text", ["./a:/etc/hostname", "/tmp/a:b", "a\0b", "iscsi://h:99999/iqn.2024-01.x:y/1",
                                  "iscsi://h/iqn.2024-01.x:y", "nbd://h:0", "nfs://h/", "nbd://-oProxy=x",
                                  "lab:afp", "gopher://h/x"])
def test_refused_targets(text):
    with pytest.raises(ValueError):
        parse_target(text)


def test_sizes_and_durations_strict_and_bounded():
    assert parse_size("4k") == 4096 and parse_duration("30s") == 30.0
    for bad in [True, 1.5, 1.5e9, "1e9", "99999999P", 2**64]:
        with pytest.raises(ValueError):
            parse_size(bad)


def test_inside_cannot_leave(tmp_path):
    assert inside(tmp_path, "raw", "w__a__h1s1q4__r1.json") == tmp_path / "raw" / "w__a__h1s1q4__r1.json"
    for bad in ["../x", "..", ".", "a/b", "/etc/passwd", "a\nb", "", ".hidden"]:
        with pytest.raises(Exception):
            inside(tmp_path, bad)


@pytest.mark.parametrize("bad", [0.0001, "0.0001s", float("nan")])
def test_durations_whole_milliseconds(bad):
    """0.0001 s would be written runtime=0, which fio reads as no limit at all."""
    with pytest.raises(ValueError):
        parse_duration(bad)
    assert parse_duration("1500ms") == 1.5 and parse_duration(0.25) == 0.25


def test_errors_do_not_echo_huge_values():
    from protolab.errors import PlanError
    from protolab.plan.load import load_plan_text

    with pytest.raises(PlanError) as e:
        load_plan_text('name = "' + "x" * 100_000 + '"\nbaseline = "a"\n', source="p.toml")
    assert len(str(e.value)) < 500 and "100000 characters" in str(e.value)


@pytest.mark.parametrize("opts", [{"random_generator": "bogus"}, {"io_submit_mode": "x"}, {"clocksource": "x"},
                                  {"buffer_compress_percentage": 500}, {"dedupe_percentage": 101}])
def test_fio_values_fio_would_refuse(opts):
    """fio would fail at run time, after the run directory exists: the plan is refused first."""
    with pytest.raises(ValueError):
        check_fio_options(opts)
    assert check_fio_options({"random_generator": "tausworthe64", "io_submit_mode": "offload"})
