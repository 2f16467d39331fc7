"""A target's kernel attach (plan.attach): well-formed tables load with their defaults; every value is checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protolab.plan.attach import Attach, attach_url
from protolab.plan.load import load_plan_text
from protolab.plan.model import TargetSpec

PLAN = """
name = "attach"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1 }]
[[configurations]]
name = "a"
target = "t"
[targets.t]
allow_overwrite = true
"""


def _target(line: str) -> TargetSpec:
    return load_plan_text(PLAN + line + "\n").targets["t"]


def test_iscsi_with_its_defaults_and_its_url():
    t = _target('attach = { iscsi = { portal = "10.1.2.3", iqn = "iqn.2001-05.com.example:array", sessions = 4 } }')
    assert t.attach is not None and t.attach.protocol == "iscsi"
    assert t.url == "attach:iscsi" == attach_url(t.attach)
    s = t.attach.spec
    assert (s.host, s.port, s.lun, s.sessions) == ("10.1.2.3", 3260, 0, 4)
    assert t.attach.describe() == "iSCSI iqn.2001-05.com.example:array LUN 0 at 10.1.2.3:3260, 4 session(s) per host"


def test_nfs_versions_and_mount_options():
    t = _target('attach = { nfs = { server = "filer.example", export = "/vol/bench", version = 3, nconnect = 4, '
                'rsize = 65536 } }')
    assert t.attach.spec.options() == "vers=3,nconnect=4,rsize=65536"
    assert t.attach.describe() == "NFS filer.example:/vol/bench (vers=3,nconnect=4,rsize=65536), file protolab.dat"
    for given, version in (("4.2", "4.2"), ("4", "4.0"), ('"4.1"', "4.1"), ("4.0", "4.0")):
        t = _target(f'attach = {{ nfs = {{ server = "f", export = "/v", version = {given} }} }}')
        assert t.attach.spec.version == version, given


def test_nvme_tcp_with_its_defaults():
    t = _target('attach = { nvme-tcp = { address = "10.1.2.5", nqn = "nqn.2014-08.org.example:flash", queues = 2 } }')
    s = t.attach.spec
    assert (s.port, s.nsid, s.queues) == (4420, 1, 2)
    assert t.attach.describe() == "NVMe/TCP nqn.2014-08.org.example:flash namespace 1 at 10.1.2.5:4420, 2 I/O queue(s)"


@pytest.mark.parametrize("table, field", [
    ({"iscsi": {"portal": "10.0.0.1:0", "iqn": "iqn.2001-05.com.example:a"}}, "portal"),
    ({"iscsi": {"portal": "10.0.0.1:3260:1", "iqn": "iqn.2001-05.com.example:a"}}, "portal"),
    ({"iscsi": {"portal": "a b", "iqn": "iqn.2001-05.com.example:a"}}, "portal"),
    ({"iscsi": {"portal": "h", "iqn": "iqn.2001-05.com.example:a'b"}}, "iqn"),
    ({"iscsi": {"portal": "h", "iqn": "iqn.2001-05.com.example:a", "sessions": 17}}, "sessions"),
    ({"iscsi": {"portal": "h", "iqn": "iqn.2001-05.com.example:a", "lun": 16384}}, "lun"),
    ({"nfs": {"server": "h;x", "export": "/v"}}, "server"),
    ({"nfs": {"server": "h", "export": "v"}}, "export"),
    ({"nfs": {"server": "h", "export": "/v w"}}, "export"),
    ({"nfs": {"server": "h", "export": "/v/./w"}}, "export"),
    ({"nfs": {"server": "h", "export": "/v", "wsize": 3 * 4096}}, "wsize"),
    ({"nfs": {"server": "h", "export": "/v", "nconnect": 0}}, "nconnect"),
    ({"nfs": {"server": "h", "export": "/v", "file": "-rf"}}, "file"),
    ({"nvme-tcp": {"address": "--help", "nqn": "nqn.2014-08.org.example:x"}}, "address"),
    ({"nvme-tcp": {"address": "h", "nqn": "nqn.2014-08.org.example:x", "queues": 129}}, "queues"),
    ({"nvme-tcp": {"address": "h", "nqn": "nqn.2014-08.org.example:x", "nsid": 0}}, "nsid"),
    ({"nvme-tcp": {"address": "h", "nqn": "nqn.2014-08.org.example:" + "x" * 200}}, "nqn"),
    ({"nvme-tcp": {"address": "h", "nqn": "nqn.2014-08.org.example:x", "port": True}}, "port"),
])
def test_each_value_is_checked(table, field):
    with pytest.raises(ValidationError) as e:
        Attach.model_validate(table)
    err = e.value.errors()[0]
    assert err["loc"][-1] == field, err


def test_kernel_paths_share_the_grammar():
    from protolab.errors import ProtolabError
    from protolab.lab.servers.words import check_iqn, check_nqn

    assert check_nqn("nqn.2014-08.org.example:x") == "nqn.2014-08.org.example:x"
    with pytest.raises(ProtolabError, match="host NQN 'nqn.2014-08.org.example:a,b' is not an NVMe qualified name"):
        check_nqn("nqn.2014-08.org.example:a,b", "host NQN")
    with pytest.raises(ProtolabError, match="initiator IQN"):
        check_iqn("iqn.2001-05.com.example:a\nb", "initiator IQN")


def test_smb_with_its_defaults_and_a_credentials_file_on_the_hosts():
    t = _target('attach = { smb = { server = "filer.example", share = "bench", credentials = "/root/smb.cred", '
                'options = ["seal", "rsize=1048576"] } }')
    assert t.attach is not None and t.attach.protocol == "smb" and t.url == "attach:smb"
    s = t.attach.spec
    assert (s.version, s.file, s.unc, t.attach.address) == ("3.1.1", "protolab.dat", "//filer.example/bench",
                                                            "filer.example")
    assert t.attach.describe() == ("SMB //filer.example/bench (vers=3.1.1,cache=none,seal,rsize=1048576), "
                                   "credentials /root/smb.cred, file protolab.dat")
    # a file on the share is protolab's own, as on an NFS export: no overwrite opt-in needed
    plan = load_plan_text(PLAN.replace("allow_overwrite = true\n", "") + 'attach = { smb = { server = "f", '
                          'share = "s", credentials = "/etc/protolab/smb.cred", version = "3.0" } }\n')
    assert plan.targets["t"].attach.spec.version == "3.0"


@pytest.mark.parametrize("smb, field", [
    ({"credentials": "root/smb.cred"}, "credentials"),  # not absolute
    ({"credentials": "/root/../etc/shadow"}, "credentials"),
    ({"credentials": "/root/./smb.cred"}, "credentials"),
    ({"credentials": "/root//smb.cred"}, "credentials"),
    ({"credentials": "/root/"}, "credentials"),
    ({"credentials": "/"}, "credentials"),
    ({"credentials": "/root/smb.cred,uid=1000"}, "credentials"),  # a second mount option
    ({"credentials": "/root/smb cred"}, "credentials"),
    ({"credentials": "/root/$HOME"}, "credentials"),
    ({"credentials": "-o"}, "credentials"),
    ({"credentials": 7}, "credentials"),
    ({"share": "bench/sub"}, "share"),
    ({"share": "-o"}, "share"),
    ({"share": ".."}, "share"),
    ({"server": "h;x"}, "server"),
    ({"version": "2.1"}, "version"),
    ({"version": 3.0}, "version"),  # TOML's 3.0 and 3.02: numbers that lost their text
    ({"options": ["cache=loose"]}, "options"),
    ({"options": ["credentials=/tmp/x"]}, "options"),
    ({"options": ["rsize=1,uid=0"]}, "options"),
    ({"options": ["seal=1"]}, "options"),
    ({"options": "seal"}, "options"),
    ({"file": "../protolab.dat"}, "file"),
])
def test_each_smb_value_is_checked(smb, field):
    with pytest.raises(ValidationError) as e:
        Attach.model_validate({"smb": {"server": "filer", "share": "bench", "credentials": "/root/smb.cred", **smb}})
    err = e.value.errors()[0]
    assert err["loc"][-1] == field, err


@pytest.mark.parametrize("key", ["password", "username", "user", "domain"])
def test_a_plan_holds_no_smb_user_or_password(key):
    secret = "hunter2hunter2"
    with pytest.raises(ValidationError) as e:
        Attach.model_validate({"smb": {"server": "filer", "share": "bench", "credentials": "/root/smb.cred",
                                       key: secret}})
    msg = e.value.errors()[0]["msg"]
    assert f"{key}: a plan holds no user name or password" in msg and "root-only file" in msg
    assert secret not in msg
    with pytest.raises(ValidationError, match="credentials"):  # and the file's path is needed
        Attach.model_validate({"smb": {"server": "filer", "share": "bench"}})
