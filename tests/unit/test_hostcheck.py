"""`protolab doctor --hosts`: the host script's findings become checks; plan values reach it only quoted."""

from __future__ import annotations

import shlex
import subprocess

from protolab.hostcheck import check_hosts, checks_from, script
from protolab.plan.load import load_plan_text
from protolab.proc import Completed, FakeRunner

PLAN = """
name = "hosts"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{ streams = 1 }]
[[hosts]]
name = "esx1"
agent = "ssh://root@esx1.example:2222"
fio = "/opt/fio/bin/fio"
[[hosts]]
name = "esx2"
agent = "fio://esx2.example"
[[configurations]]
name = "a"
target = "flash"
[targets.flash]
attach = { nvme-tcp = { address = "10.1.2.5", nqn = "nqn.2014-08.org.example:flash" } }
"""


def test_findings_become_checks():
    out = "fio fio-3.33\ntool nvme /usr/sbin/nvme\nmodule nvme_tcp no\nmtu 10.1.2.5 eth1 9000\n"
    checks = checks_from(out, {"nvme-tcp"}, {"10.1.2.5": {"nvme-tcp"}}, "esx1")
    assert [(c.item, c.ok, c.detail) for c in checks] == [
        ("fio", True, "fio-3.33"), ("nvme-tcp: nvme", True, "/usr/sbin/nvme"),
        ("nvme-tcp: module nvme_tcp", False, "not in this kernel"),
        ("nvme-tcp: route to 10.1.2.5", True, "via eth1, MTU 9000")]
    missing = checks_from("fio -\ntool nvme -\nmtu 10.1.2.5 - -\n", {"nvme-tcp"}, {"10.1.2.5": {"nvme-tcp"}}, "esx1")
    assert [c.ok for c in missing] == [False, False, False, False]
    assert missing[1].fix == "install nvme on esx1 (Debian: nvme-cli)"


def test_two_protocols_at_one_address_are_both_checked():
    plan = load_plan_text(PLAN.replace('target = "flash"\n', 'target = "flash"\n[[configurations]]\nname = "b"\n'
                                       'target = { attach = { iscsi = { portal = "10.1.2.5", iqn = '
                                       '"iqn.2001-05.com.example:a" } }, allow_overwrite = true }\n'))
    from protolab.hostcheck import attach_addresses

    assert attach_addresses(plan) == {"10.1.2.5": {"iscsi", "nvme-tcp"}}
    runner = FakeRunner({("ssh",): Completed(("ssh",), 0, "fio fio-3.33\nmtu 10.1.2.5 eth1 1500\n", "")})
    items = [c.item for c in check_hosts(plan, runner)[0].checks]
    assert items == ["reached", "fio", "iscsi: iscsiadm", "iscsi: module iscsi_tcp", "nvme-tcp: nvme",
                     "nvme-tcp: module nvme_tcp", "iscsi+nvme-tcp: route to 10.1.2.5"]


def test_a_host_that_does_not_answer_in_time_is_named_in_one_short_line():
    from protolab.errors import ToolError

    def slow(argv):
        raise ToolError(f"{shlex.join(argv)}: did not finish within 30 s")

    reports = check_hosts(load_plan_text(PLAN), FakeRunner({("ssh",): slow}))
    assert reports[0].checks[0].detail == "no answer within 30 s"
    assert reports[1].required is False  # a fio:// host: nothing to check, the doctor does not fail for it


def test_each_host_over_its_own_connection_and_an_unreachable_one_in_one_line():
    plan = load_plan_text(PLAN)
    answers = {("ssh",): Completed(("ssh",), 255, "", "ssh: connect to host esx1.example port 2222: No route\n")}
    runner = FakeRunner(answers)
    reports = check_hosts(plan, runner)
    assert [r.title for r in reports] == ["esx1 (ssh://root@esx1.example:2222)", "esx2 (fio://esx2.example)"]
    assert [(c.item, c.ok) for c in reports[0].checks] == [("reached", False)]
    assert "No route" in reports[0].checks[0].detail and "ssh -p 2222 root@esx1.example true" in reports[0].checks[0].fix
    assert not reports[1].checks[0].ok and "nothing checked" in reports[1].checks[0].detail
    argv = runner.calls[0][0]
    assert argv[:2] == ("ssh", "-n") and ("-p", "2222") == argv[argv.index("-p"):argv.index("-p") + 2]
    assert argv[-2] == "root@esx1.example" and "'/opt/fio/bin/fio' --version" not in argv[-1]
    assert "/opt/fio/bin/fio --version" in argv[-1] and "for a in 10.1.2.5;" in argv[-1]


def test_the_script_runs_in_sh_and_quotes_what_it_is_given(tmp_path):
    """A fio path with a space and a quote stays one word: sh runs the script as protolab wrote it."""
    odd = tmp_path / "my fio's"
    odd.write_text("#!/bin/sh\necho fio-odd\n")
    odd.chmod(0o755)
    body = script(str(odd), {"nfs"}, ["127.0.0.1"])
    out = subprocess.run(["sh", "-c", body], capture_output=True, text=True, timeout=30).stdout
    seen = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith(("fio", "module")))
    assert seen["fio"] == "fio-odd"
    assert seen["module"] in ("nfs yes", "nfs no")
    assert "mtu 127.0.0.1 lo 65536" in out.splitlines()
    assert shlex.quote(str(odd)) in body
