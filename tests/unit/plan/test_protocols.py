"""The protocol registry (plan.protocols) is the one place a protocol is named: target grammar, lab exports,
fio engines, QEMU disks, the wire model, `protolab limits`, the report and cells.csv follow it."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from conftest import DATA
from protolab.plan import protocols
from protolab.plan.protocols import PROTOCOLS, Protocol, TargetRef
from protolab.plan.target_grammar import parse_target, protocol_named

V1 = DATA / "v1-run"


def _fakenet(text, parts, host, port):
    return TargetRef("fakenet", text, host, port or 4000, export=parts.path.lstrip("/") or None)


FAKENET = Protocol("fakenet", "FakeNet", "fakenet://HOST[:PORT]", 4000, _fakenet, engine="nbd", tcp=True,
                   wire_model="nbd")


@pytest.fixture
def fakenet(monkeypatch):
    monkeypatch.setitem(PROTOCOLS, "fakenet", FAKENET)
    return FAKENET


def test_the_registry_answers_every_list_the_code_needs():
    assert protocols.lab_targets() == ["local", "iscsi", "nfs", "nbd", "nvme-tcp", "smb"]
    assert protocols.exported() == ["iscsi", "nfs", "nbd", "nvme-tcp", "smb"]
    from protolab.plan.servers import kernel_protocols, kernel_served

    # kernels serve the first three; SMB is reached by the guests' kernels only (Samba serves it)
    assert kernel_protocols() == ["iscsi", "smb", "nvme-tcp", "nfs"] and kernel_served("nvme-tcp", None)
    assert not kernel_served("smb", None) and protocols.guest_kernel_only("smb")
    assert not protocols.guest_kernel_only("nfs") and not protocols.guest_kernel_only("local")
    assert kernel_served("iscsi", "lio") and not kernel_served("iscsi", None) and not kernel_served("local", None)
    assert kernel_served("nfs", "knfsd") and not kernel_served("nfs", None)
    assert protocols.engines() == ["libiscsi", "nfs", "nbd"]
    assert protocols.modelled() == ["iscsi", "nfs", "nbd", "nvme-tcp", "smb", "fc", "fcoe"]
    ref = parse_target("iscsi://198.18.0.1/iqn.2026-11.org.protolab:x/0")
    assert (ref.protocol, ref.port, ref.wired) == ("iscsi", 3260, True)
    assert parse_target("lab:local").protocol == "local" and not parse_target("lab:local").wired
    assert parse_target("/dev/sdb").protocol is None and protocol_named("nbd://h") == "nbd"


def test_a_protocol_added_to_the_registry_alone_parses_is_modelled_and_reaches_the_report(fakenet, tmp_path):
    from protolab.analysis.limits import choose_protocols
    from protolab.analysis.wire import ceiling
    from protolab.report.report_cli import write_report
    from protolab.results.rundir import RunDir

    ref = parse_target("fakenet://198.18.0.1:4001/x")
    assert (ref.kind, ref.port, ref.export, ref.wired) == ("fakenet", 4001, "x", True)
    with pytest.raises(ValueError, match="fakenet://"):
        parse_target("nosuch://h/x")  # the error lists the registered schemes, the new one included
    nbd, fake = ceiling("nbd", link_bps="1GbE", mtu=1500, block_size=4096, read_pct=75), \
        ceiling("fakenet", link_bps="1GbE", mtu=1500, block_size=4096, read_pct=75)
    assert fake.iops == pytest.approx(nbd.iops) and fake.protocol == "fakenet"
    assert choose_protocols("fakenet", "1GbE", 1500) == (["fakenet"], [])
    # a stored run whose NBD configuration reached its storage through fakenet://
    run = tmp_path / "run"
    shutil.copytree(V1, run)
    m = json.loads((run / "manifest.json").read_text())
    for c in m["plan"]["configurations"]:
        if c["name"] == "nbd-1500":
            c["target"] = "fakenet://198.18.0.1:4000"
    (run / "manifest.json").write_text(json.dumps(m))
    write_report(RunDir.open(run), figures=False)
    rows = list(csv.DictReader((run / "cells.csv").open()))
    assert {(r["configuration"], r["protocol"]) for r in rows} == {
        ("local", "local"), ("iscsi-1500", "iscsi"), ("nbd-1500", "fakenet")}
    ceilings = list(csv.DictReader((run / "tables" / "ceiling-tr3808-4k.csv").open()))
    assert {(r["configuration"], r["protocol"]) for r in ceilings} == {("iscsi-1500", "iscsi"),
                                                                       ("nbd-1500", "fakenet")}
