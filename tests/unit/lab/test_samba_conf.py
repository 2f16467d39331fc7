"""The Samba adapter's smb.conf, command line and share (lab.servers.samba); the real smbd: tests/lab/test_samba_lab.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.lab.servers.samba import CACHE, SmbShare, password, smb_conf, smbd_argv

ROOT = Path("/var/lib/protolab/pl/smb")
SHARE = Path("/var/lib/protolab/pl/pl-mnt/pl-pool/smb")


def params(text: str) -> dict[str, dict[str, str]]:
    """smb.conf as {section: {parameter: value}}; a parameter given twice in a section fails the test."""
    out: dict[str, dict[str, str]] = {}
    section = ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if m := re.fullmatch(r"\[(.+)\]", line):
            section = m[1]
            out[section] = {}
            continue
        key, value = (w.strip() for w in line.split("=", 1))
        assert key not in out[section], key
        out[section][key] = value
    return out


def test_every_directory_smbd_keeps_is_under_the_labs_own():
    g = params(smb_conf(ROOT, SHARE, ["198.18.0.128"]))["global"]
    dirs = {k: v for k, v in g.items() if v.startswith(("/", "tdbsam:")) and k != "printcap name"}
    assert set(dirs) == {"private dir", "binddns dir", "lock directory", "state directory", "cache directory",
                         "pid directory", "ncalrpc dir", "winbindd socket directory", "ntp signd socket directory",
                         "usershare path", "log file", "username map", "passdb backend"}
    for k, v in dirs.items():
        assert v.removeprefix("tdbsam:").startswith(f"{ROOT}/"), (k, v)
    assert "/var/lib/samba" not in str(g) and "/run/samba" not in str(g)


def test_smb3_only_one_share_no_printing_nor_netbios_nor_helpers():
    conf = params(smb_conf(ROOT, SHARE, ["198.18.0.128"]))
    g = conf["global"]
    assert (g["server min protocol"], g["server max protocol"]) == ("SMB3_00", "SMB3_11")
    assert (g["disable netbios"], g["smb ports"]) == ("yes", "445")
    assert (g["load printers"], g["disable spoolss"], g["printcap name"]) == ("no", "yes", "/dev/null")
    assert g["rpc start on demand helpers"] == "no" and g["security"] == "user" and g["map to guest"] == "never"
    assert list(conf) == ["global", "protolab"]
    share = conf["protolab"]
    assert share["path"] == str(SHARE) and share["read only"] == "no" and share["valid users"] == "root"
    assert share["strict sync"] == "yes"


def test_only_the_granted_addresses_get_in():
    g = params(smb_conf(ROOT, SHARE, ["198.18.0.128", "198.18.1.129"]))["global"]
    assert (g["hosts allow"], g["hosts deny"]) == ("198.18.0.128 198.18.1.129", "ALL")
    g = params(smb_conf(ROOT, SHARE, []))["global"]
    assert (g["hosts allow"], g["hosts deny"]) == ("", "ALL")  # no one: Samba's deny list alone
    for bad in (["10.0.0.1"], ["198.18.0.1 ALL"], ["198.18.0.1\nhosts deny ="], ["all"]):
        with pytest.raises(ProtolabError, match="Samba: client"):
            smb_conf(ROOT, SHARE, bad)


def test_the_device_models_setting_turns_off_client_caching_and_sendfile():
    plain = params(smb_conf(ROOT, SHARE, []))
    modelled = params(smb_conf(ROOT, SHARE, [], modelled=True))
    assert plain["protolab"]["oplocks"] == "yes" and modelled["protolab"]["oplocks"] == "no"
    assert modelled["protolab"]["level2 oplocks"] == "no"
    assert plain["global"]["use sendfile"] == modelled["global"]["use sendfile"] == "no"  # past the shim
    assert "O_DIRECT twin" in CACHE


@pytest.mark.parametrize("path", ["/lab/%U/smb", "/lab/a b", "/lab/x\ninclude = /etc/passwd", "relative/smb",
                                  "/lab/../etc"])
def test_a_path_smb_conf_would_read_otherwise_is_refused(path):
    with pytest.raises(ProtolabError, match="cannot go into smb.conf"):
        smb_conf(Path(path), SHARE, [])
    with pytest.raises(ProtolabError, match="cannot go into smb.conf"):
        smb_conf(ROOT, Path(path), [])


def test_smbd_runs_in_the_foreground_on_its_own_conf_with_or_without_the_shim():
    conf = ROOT / "smb.conf"
    assert smbd_argv(conf) == ["smbd", "--foreground", "--no-process-group", f"--configfile={conf}",
                               "--debug-stdout", "--debuglevel=1"]
    assert smbd_argv(conf, "/x/protolab-direct.so")[:3] == ["env", "LD_PRELOAD=/x/protolab-direct.so", "smbd"]


def test_the_share_as_clients_reach_it():
    s = SmbShare("198.18.0.1")
    assert (s.unc, s.url, s.user, s.port) == ("//198.18.0.1/protolab", "smb://198.18.0.1/protolab", "protolab", 445)
    assert SmbShare("198.18.0.1", port=4445).url == "smb://198.18.0.1:4445/protolab"
    f = s.facts()
    assert (f["dialects"], f["max_read"], f["max_write"], f["credits"]) == ("SMB 3.0-3.1.1", 8 << 20, 8 << 20, 8192)


def test_the_password_file_must_be_roots_alone(tmp_path):
    (tmp_path / "smb").mkdir()
    pw = tmp_path / "smb" / "password"
    pw.write_text("abc123\n")
    pw.chmod(0o644)
    with pytest.raises(ProtolabError):
        password(tmp_path)
