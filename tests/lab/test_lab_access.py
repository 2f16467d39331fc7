"""Each protocol reaches its export from a granted host and is refused from a host that is not granted."""

from __future__ import annotations

import pytest

from conftest import PREFIX, sh, spec
from protolab.conventions import DATA_FILE

pytestmark = pytest.mark.lab


@pytest.fixture
def lab(make_lab):
    """Two hosts; every export admits host 0 only."""
    return make_lab(spec(hosts=2, exports={"iscsi": [0], "nfs": [0], "nbd": [0]}),
                    {"iscsi", "nfs", "nbd", "local"})


def from_host(lab, host: int, argv: list[str], timeout: float = 10):
    return sh(argv, netns=lab.names.host_ns(host), timeout=timeout)


def test_iscsi_admits_granted_host_only(lab):
    url = lab.endpoint("iscsi", host=0).url
    assert url.startswith(f"iscsi://198.18.0.1:3260/iqn.2024-01.org.protolab:{PREFIX}.iscsi/")
    ok = from_host(lab, 0, ["iscsi-readcapacity16", url])
    assert ok.returncode == 0, ok.stderr
    total = next(ln for ln in ok.stdout.decode().splitlines() if ln.startswith("Total size:"))
    assert int(total.split(":")[1]) == lab.spec.export_bytes
    assert from_host(lab, 0, ["iscsi-inq", url]).returncode == 0
    refused = from_host(lab, 1, ["iscsi-inq", url])
    assert refused.returncode != 0 or b"Login Failed" in refused.stdout + refused.stderr
    assert b"Peripheral Device Type" not in refused.stdout


def test_nfs_v3_and_v4_admit_granted_host_only(lab):
    ep = lab.endpoint("nfs", host=0)
    for url in (ep.url, ep.url + "?version=4"):
        ok = from_host(lab, 0, ["nfs-ls", url])
        assert ok.returncode == 0, ok.stderr
        line = next(ln for ln in ok.stdout.decode().splitlines() if ln.endswith(f" {DATA_FILE}"))
        assert int(line.split()[4]) == lab.spec.export_bytes == ep.size_bytes
        refused = from_host(lab, 1, ["nfs-ls", url])
        assert refused.returncode != 0 and f" {DATA_FILE}".encode() not in refused.stdout


def test_nbd_admits_granted_host_only(lab):
    url = lab.endpoint("nbd", host=0).url
    assert url == "nbd://198.18.0.1:10809"
    ok = from_host(lab, 0, ["nbdinfo", "--size", url])
    assert ok.returncode == 0, ok.stderr
    assert int(ok.stdout) == lab.spec.export_bytes
    refused = from_host(lab, 1, ["nbdinfo", "--size", url], timeout=5)
    assert refused.returncode != 0 and not refused.stdout.strip()


def test_local_is_a_preallocated_file_in_the_pool_seen_from_storage(lab):
    ep = lab.endpoint("local")
    assert ep.netns == lab.names.storage_ns
    assert ep.url.startswith(str(lab.workdir)) and ep.url.endswith(f"/local/{DATA_FILE}")
    stat = sh(["stat", "-c", "%s %b %B", ep.url], netns=ep.netns, check=True).stdout.split()
    size, blocks, bsize = (int(x) for x in stat)
    assert size == lab.spec.export_bytes and blocks * bsize >= size  # preallocated, not sparse
    attrs = sh(["lsattr", ep.url], check=True).stdout.split()[0]
    assert b"C" in attrs  # no copy-on-write unless the plan asks


def test_describe_and_pids_name_every_export_and_server(lab):
    text = lab.describe()
    for proto in ("iscsi", "nfs", "nbd", "local"):
        assert lab.endpoint(proto).url in text
    assert "admits hosts 0" in text
    pids = lab.server_pids()
    assert set(pids) == {"tgtd", "rpcbind", "ganesha.nfsd", "nbdkit"}
    for name, pid in pids.items():
        comm = open(f"/proc/{pid}/comm").read().strip()
        assert comm.startswith(name[:15]), (name, comm)
    assert len(lab.interfaces()) == 2 * (1 + 2)


def test_each_nic_reaches_its_own_storage_port(make_lab):
    lab = make_lab(spec(nics_per_host=2, storage_ports=2), {"nbd"})
    for nic in (0, 1):
        ep = lab.endpoint("nbd", host=0, nic=nic)
        assert ep.url == f"nbd://198.18.{nic}.1:10809"
        ifname = lab.names.host_link(0, nic).near.ifname
        before = int(sh(["cat", f"/sys/class/net/{ifname}/statistics/tx_bytes"], netns=ep.netns).stdout)
        ok = sh(["nbdinfo", "--size", ep.url], netns=ep.netns, timeout=10)
        assert ok.returncode == 0, ok.stderr
        after = int(sh(["cat", f"/sys/class/net/{ifname}/statistics/tx_bytes"], netns=ep.netns).stdout)
        assert after > before  # the request left through this NIC
