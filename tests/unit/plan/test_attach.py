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
