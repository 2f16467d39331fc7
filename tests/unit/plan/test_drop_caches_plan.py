"""`[method] drop_caches` in a plan (plan.drop_caches): its forms, one-line errors naming the field, the plans it refuses,
and `validate`'s warning when a data set read through a host's page cache fits in memory and caches are not
dropped."""

from __future__ import annotations

import pytest

from protolab.errors import PlanError
from protolab.plan.load import load_plan_text
from protolab.plan.migrate import migrate
from protolab.plan.warnings import plan_warnings

PLAN = """name = "w"
baseline = "a"
workloads = ["tr3808-4k"]
load_points = [{{ hosts = {hosts}, streams = 2, oio = 4 }}]
[method]
repeats = 3
data_size = "256M"
{method}
[[configurations]]
name = "a"
target = "/var/tmp/protolab-unit/t.dat"
direct = {direct}
{more}"""
SERVER = '{ servers = [{ name = "filer", ssh = "ssh://root@10.1.2.4" }] }'


def _plan(method: str = "", *, hosts: int = 1, direct: str = "true", more: str = ""):
    return load_plan_text(PLAN.format(method=method, hosts=hosts, direct=direct, more=more), source="p.toml")


def test_true_drops_on_the_load_hosts_and_a_table_names_servers_too():
    assert _plan().method.drop_caches is None and _plan("drop_caches = false").method.drop_caches is None
    d = _plan("drop_caches = true").method.drop_caches
    assert d.hosts is True and d.servers == []
    d = _plan(f"drop_caches = {SERVER}").method.drop_caches
    assert d.hosts and [(s.name, s.ssh) for s in d.servers] == [("filer", "ssh://root@10.1.2.4")]
    assert d.servers[0].host().agent == "ssh://root@10.1.2.4"
    p = _plan(f"drop_caches = {SERVER}")
    assert p.method.summary().endswith(", page caches dropped before each cell (the load hosts, filer)")
    assert _plan('drop_caches = { hosts = false, servers = [{ name = "f", ssh = "ssh://f" }] }').method.summary() \
        .endswith("page caches dropped before each cell (f)")


@pytest.mark.parametrize("value, said", [
    ('"yes"', "p.toml:8: method.drop_caches: must be true, false or a table"),
    ("{ hosts = false }", "p.toml:8: method.drop_caches: drops nowhere: hosts = false and no servers"),
    ('{ servers = [{ name = "f", ssh = "fio://10.1.2.4" }] }',
     "p.toml:8: method.drop_caches.servers[0]: ssh 'fio://10.1.2.4': give ssh://[USER@]HOST[:PORT]"),
    ('{ servers = [{ name = "f", ssh = "ssh://root@-x" }] }', "p.toml:8: method.drop_caches.servers[0]: agent "),
    ('{ servers = [{ name = "f", ssh = "ssh://h", ssh_options = ["-F", "/x"] }] }',
     "p.toml:8: method.drop_caches.servers[0]: ssh_options: -F is not allowed in a plan"),
    ('{ servers = [{ name = "f", ssh = "ssh://a" }, { name = "f", ssh = "ssh://b" }] }',
     "method.drop_caches: drop_caches.servers: names must be unique"),
    ("{ server = 1 }", "p.toml:8: method.drop_caches.server: unknown field"),
])
def test_a_bad_drop_caches_is_one_line_naming_the_field(value, said):
    with pytest.raises(PlanError) as e:
        _plan(f"drop_caches = {value}")
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_fio_agent_host_runs_no_command_so_its_cache_cannot_be_dropped():
    hosts = '[[hosts]]\nname = "h1"\nagent = "fio://10.1.2.7"\n'
    with pytest.raises(PlanError) as e:
        _plan("drop_caches = true", more=hosts)
    assert str(e.value).startswith("p.toml: method.drop_caches: host h1 is a fio:// agent, which runs no command")
    # on servers alone it is fine
    assert _plan('drop_caches = { hosts = false, servers = [{ name = "f", ssh = "ssh://f" }] }',
                 more=hosts).method.drop_caches.hosts is False


def test_a_stored_plan_of_format_9_gains_no_drop():
    assert migrate({"method": {"duration": 1}}, 9) == {"method": {"drop_caches": None, "duration": 1}}
    assert _plan().model_dump(mode="json")["method"]["drop_caches"] is None


def test_validate_warns_when_a_data_set_read_through_the_page_cache_fits_in_memory_and_is_not_dropped():
    memory = 24 * 1024**3
    [w] = plan_warnings(_plan(direct="false"), memory_bytes=memory)
    assert w == ("configuration 'a': its data set (256M) fits in this machine's memory (24G) and direct = false "
                 "reads through its page cache: a cell reads what the one before left there; set "
                 "method.drop_caches = true (each cell then starts cold) or direct = true")
    assert plan_warnings(_plan(direct="false"), memory_bytes=128 * 1024**2) == []  # larger than the memory
    assert plan_warnings(_plan("drop_caches = true", direct="false"), memory_bytes=memory) == []
    assert plan_warnings(_plan(direct="true"), memory_bytes=memory) == []  # O_DIRECT: no page cache
    # a remote host's memory is not known before the run: said so
    ssh = '[[hosts]]\nname = "esx1"\nagent = "ssh://root@esx1"\n'
    [w] = plan_warnings(_plan(direct="false", more=ssh), memory_bytes=memory)
    assert w.startswith("configuration 'a': direct = false reads through the page cache of esx1, whose memory is "
                        "not known here: a data set of 256M that fits in it")
