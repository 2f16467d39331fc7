"""A guest reached over ssh (vm.guestssh): the key reaches the command line only as TYPE:BASE64, the forward
stays on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab.errors import ProtolabError
from protolab.vm.guestssh import GuestSsh, check_key
from protolab.vm.qemu import GuestSpec

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFk2cJ3F2gJ0nOqk3b8m1Rkq1yq2uQK6m7H1V0s9cZ0x root@lab"


def test_the_key_and_the_forward_on_the_qemu_command_line(tmp_path):
    ssh = GuestSsh(2222, KEY)
    argv = GuestSpec("g", Path("/k"), Path("/i"), fio_port=18765, ssh=ssh).argv(tmp_path / "p", tmp_path / "c")
    cmdline = argv[argv.index("-append") + 1]
    assert "pl.ssh=ssh-ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIFk2cJ3F2gJ0nOqk3b8m1Rkq1yq2uQK6m7H1V0s9cZ0x" in cmdline.split()
    assert "root@lab" not in cmdline  # the comment stays here
    assert argv[argv.index("-netdev") + 1] == ("user,id=ctl,restrict=on,hostfwd=tcp:127.0.0.1:18765-:8765,"
                                               "hostfwd=tcp:127.0.0.1:2222-:22")
    plain = GuestSpec("g", Path("/k"), Path("/i")).argv(tmp_path / "p", tmp_path / "c")
    assert "pl.ssh" not in plain[plain.index("-append") + 1] and ":22" not in plain[plain.index("-netdev") + 1]


@pytest.mark.parametrize("bad", ["", "ssh-ed25519", "ssh-dss AAAAB3NzaC1kc3MAAACBAPx8 x",
                                 "ssh-ed25519 AAAA,pl.nvme=1", "ssh-ed25519 AAAAC3Nza\nC1lZDI1NTE5AAAA",
                                 "ssh-ed25519 AAAAC3Nza'C1lZDI1NTE5AAAAIFk2cJ3F"])
def test_anything_but_a_public_key_is_refused(bad):
    with pytest.raises(ProtolabError, match="not an OpenSSH public key"):
        check_key(bad)


def test_a_port_out_of_range_is_refused():
    with pytest.raises(ProtolabError, match="not a TCP port"):
        GuestSsh(70000, KEY).hostfwd()
