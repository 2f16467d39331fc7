"""The [lab] table: links, hosts, ports, paths, exports — and messages a user understands."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protolab.plan.topology import ExportAccess, LabSpec, LinkSpec, parse_delay_us, parse_rate


@pytest.mark.parametrize("text, bps", [
    ("1GbE", 10**9), ("10gbe", 10**10), ("25GbE", 25 * 10**9), ("2.5gbit", 25 * 10**8),
    ("500mbit", 5 * 10**8), ("100M", 10**8), ("1Gb/s", 10**9), (12345, 12345),
])
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("bad", ["fast", "1 GbE!", "0.1bit", True, 0])
def test_bad_rates_are_refused(bad):
    with pytest.raises(ValueError, match="rate"):
        parse_rate(bad)


def test_delays():
    assert parse_delay_us("250us") == 250
    assert parse_delay_us("1ms") == 1000
    assert parse_delay_us("0.5s") == 500_000
    with pytest.raises(ValueError, match="delay must be like"):
        parse_delay_us("1 fortnight")


def test_link_defaults_and_properties():
    link = LinkSpec()
    assert (link.rate, link.mtu, link.delay, link.loss_pct, link.offloads) == ("1GbE", 1500, None, 0.0, True)
    assert link.rate_bps == 10**9 and link.delay_us == 0
    assert LinkSpec(rate="none").rate_bps is None
    assert LinkSpec(delay="2ms").delay_us == 2000


@pytest.mark.parametrize("field, value, message", [
    ("mtu", 100, "mtu must be between 576 and 65535"),
    ("mtu", 70000, "mtu must be between 576 and 65535"),
    ("loss_pct", 150, "loss_pct must be a percentage between 0 and 100"),
    ("rate", "quick", "rate must be a preset"),
    ("delay", "soon", "delay must be like"),
    ("bogus", 1, "Extra inputs are not permitted"),
])
def test_link_messages(field, value, message):
    with pytest.raises(ValidationError, match=message):
        LinkSpec.model_validate({field: value})


def test_merged_applies_overrides_and_validates():
    base = LinkSpec(rate="10GbE", mtu=1500)
    jumbo = base.merged({"mtu": 9000})
    assert (jumbo.rate, jumbo.mtu) == ("10GbE", 9000)
    assert base.mtu == 1500  # frozen, unchanged
    assert base.merged({}) is base and base.merged(None) is base
    with pytest.raises(ValueError, match="unknown link setting.*speed.*allowed: rate, mtu"):
        base.merged({"speed": 5})
    with pytest.raises(ValidationError, match="mtu must be between"):
        base.merged({"mtu": 10})


def test_lab_defaults():
    lab = LabSpec()
    assert (lab.prefix, lab.hosts, lab.nics_per_host, lab.storage_ports) == ("pl", 1, 1, 1)
    assert lab.pool_bytes == 2 * 1024**3 and lab.export_bytes == 256 * 1024**2
    assert lab.cow is False
    assert lab.access("nbd").admits(0)


@pytest.mark.parametrize("raw, message", [
    ({"prefix": "PL"}, "prefix must be 1 to 6 lowercase letters"),
    ({"prefix": "toolongx"}, "prefix must be 1 to 6"),
    ({"hosts": 0}, "hosts must be between 1 and 200"),
    ({"nics_per_host": 9}, "nics_per_host must be between 1 and 8"),
    ({"storage_ports": 0}, "storage_ports must be between 1 and 8"),
    ({"pool_size": "lots"}, "pool_size: expected a size"),
    ({"export_size": "1M"}, "export_size must be at least 16M"),
    ({"exports": {"iscsi": [3]}}, r"exports.iscsi: host 3 does not exist \(hosts are numbered 0 to 0\)"),
    ({"exports": {"afp": [0]}}, "afp"),
    ({"nics_per_host": 2}, "host 0: NICs 0 and 1 both reach storage port 0"),
    ({"paths": [{"nic": 1, "port": 0}]}, "paths: nic 1 does not exist"),
    ({"storage_ports": 2, "paths": [{"nic": 0, "port": 5}]}, "paths: port 5 does not exist"),
])
def test_lab_messages(raw, message):
    with pytest.raises(ValidationError, match=message):
        LabSpec.model_validate(raw)


def test_paths_default_and_explicit():
    lab = LabSpec(hosts=2, nics_per_host=2, storage_ports=2)
    assert [lab.port_of(h, n) for h in (0, 1) for n in (0, 1)] == [0, 1, 0, 1]
    crossed = LabSpec.model_validate({
        "hosts": 2, "nics_per_host": 2, "storage_ports": 2,
        "paths": [{"nic": 0, "port": 1}, {"nic": 1, "port": 0}, {"host": 1, "nic": 0, "port": 0},
                  {"host": 1, "nic": 1, "port": 1}],
    })
    assert [crossed.port_of(0, 0), crossed.port_of(0, 1)] == [1, 0]
    assert [crossed.port_of(1, 0), crossed.port_of(1, 1)] == [0, 1]


def test_export_access_forms():
    lab = LabSpec.model_validate({"hosts": 3, "exports": {"iscsi": [0, 2], "nfs": {"hosts": []}}})
    assert lab.access("iscsi") == ExportAccess(hosts=(0, 2))
    assert [lab.access("iscsi").admits(h) for h in range(3)] == [True, False, True]
    assert not any(lab.access("nfs").admits(h) for h in range(3))
    assert all(lab.access("nbd").admits(h) for h in range(3))


def test_lab_spec_is_frozen_and_json_round_trips():
    lab = LabSpec(hosts=2, link=LinkSpec(mtu=9000), exports={"nbd": ExportAccess(hosts=(1,))})
    with pytest.raises(ValidationError):
        lab.hosts = 3  # type: ignore[misc]
    assert LabSpec.model_validate(lab.model_dump(mode="json")) == lab


def test_the_lab_and_the_wire_model_read_rates_with_one_grammar():
    from protolab.plan.links import parse_link

    for text in ("1GbE", "10gbit", "2.5G", "500mbit", "25GbE"):
        assert parse_rate(text) == int(parse_link(text).bps)
    for bad in ("1e400", "inf", "1e30gbit", 10**20, "4GFC", "100MB/s"):
        with pytest.raises(ValueError):
            parse_rate(bad)  # one line from the plan's loader, never an OverflowError
