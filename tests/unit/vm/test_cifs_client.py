"""A load guest's CIFS mount word (vm.initiators.cifs): what reaches its kernel command line, and what never does."""

from __future__ import annotations

import pytest

from protolab.errors import ProtolabError
from protolab.vm.initiators.cifs import CifsClient
from protolab.vm.initiators.initiator_adapter import MOUNT

PW = "0123456789abcdef0123456789abcdef"


def test_the_word_carries_address_share_user_password_and_dialect():
    c = CifsClient("198.18.0.1", "protolab", "protolab", PW)
    assert c.kernel_args() == [f"pl.smb=198.18.0.1,protolab,protolab,{PW},3.1.1"]
    assert CifsClient("198.18.1.1", "protolab", "protolab", PW, "3.0", ("rsize=65536", "nosharesock")).kernel_args() \
        == [f"pl.smb=198.18.1.1,protolab,protolab,{PW},3.0,rsize=65536,nosharesock"]


def test_what_people_see_has_no_password():
    c = CifsClient("198.18.0.1", "protolab", "protolab", PW, options=("wsize=1048576",))
    assert c.console_line == "protolab-guest: smb //198.18.0.1/protolab on /mnt/pl vers=3.1.1,cache=none,wsize=1048576"
    assert c.describe() == ("//198.18.0.1/protolab as protolab by the kernel's CIFS client, "
                            "vers=3.1.1,cache=none,wsize=1048576")
    assert PW not in c.console_line + c.describe() + repr(c.mount_options)
    assert c.data_file == f"{MOUNT}/protolab.dat"


@pytest.mark.parametrize("field, value, match", [
    ("address", "10.0.0.1", "outside the lab range"),
    ("address", "198.18.0.1,ip=10.0.0.1", "CIFS server address"),
    ("share", "a,b", "CIFS share"),
    ("share", "a b", "CIFS share"),
    ("user", "root,password=x", "CIFS user"),
    ("password", "short", "CIFS password"),
    ("password", PW + ",uid=0", "CIFS password"),
    ("password", PW + " pl.ssh=x", "CIFS password"),
    ("version", "2.1", "CIFS version"),
    ("version", "1.0", "CIFS version"),
    ("options", ("cache=loose",), "protolab sets"),
    ("options", ("password=x",), "protolab sets"),
    ("options", ("credentials=/etc/shadow",), "protolab sets"),
    ("options", ("rsize=64k",), "protolab sets"),
    ("options", ("rsize=1,ip=10.0.0.1",), "protolab sets"),
    ("options", ("seal=1",), "protolab sets"),
])
def test_anything_the_kernels_option_parser_would_read_otherwise_is_refused(field, value, match):
    good = dict(address="198.18.0.1", share="protolab", user="protolab", password=PW)
    with pytest.raises(ProtolabError, match=match):
        CifsClient(**{**good, field: value}).kernel_args()


@pytest.mark.parametrize("version", ["3.1.1", "3.02", "3.0", "3"])
def test_every_dialect_the_lab_share_serves(version):
    assert CifsClient("198.18.0.1", "protolab", "protolab", PW, version).kernel_args()[0].endswith(f",{version}")
