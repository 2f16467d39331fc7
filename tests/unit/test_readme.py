"""The README and docs/: plan examples are valid plans, the command table names real commands, links resolve
inside the repository, and the README stays short."""

from __future__ import annotations

import re

from conftest import ROOT, docs_text, run_cli
from protolab.plan.load import load_plan_text

README = (ROOT / "README.md").read_text()
PLAN_DOC = (ROOT / "docs" / "plan.md").read_text()
BLOCKS = re.findall(r"```toml\n(.*?)```", PLAN_DOC, re.S)
HEAD = 'name = "x"\nbaseline = "a"\nworkloads = ["tr3808-4k"]\n[[configurations]]\nname = "a"\ntarget = "{t}"\n' \
       "[[load_points]]\nhosts = {h}\nstreams = 1\n"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_short_and_its_plan_is_valid():
    assert len(README.splitlines()) <= 200
    block, attached = re.findall(r"```toml\n(.*?)```", README, re.S)
    plan = load_plan_text(block, source="README")
    assert [c.name for c in plan.configurations] == ["local", "iscsi", "nfs"] and plan.uses_lab()
    plan = load_plan_text(HEAD.format(t="array", h=1) + attached, source="README attach")
    from protolab.plan.preflight import preflight

    preflight(plan, "README attach")  # the attach example is one `run` takes
    assert plan.targets["array"].attach.iscsi.sessions == 4 and plan.hosts[0].agent.startswith("ssh://")


def test_plan_example_is_valid():
    plan = load_plan_text(BLOCKS[0], source="docs/plan.md")
    assert [w.name for w in plan.workloads] == ["tr3808-4k", "tr3808-8k", "oltp-32", "mix"]
    assert plan.targets["nvme"].allow_overwrite and plan.method.repeats == 5


def _block(start: str) -> str:
    return next(b for b in re.findall(r"```toml\n(.*?)```", docs_text(), re.S) if b.startswith(start))


def test_shape_example_is_valid():
    from protolab.engine.jobfile import shape_options

    text = _block("workloads = [") + HEAD.replace('workloads = ["tr3808-4k"]\n', "").format(t="/tmp/a", h=1)
    plan = load_plan_text(text, source="docs shapes")
    opts = {w.name: shape_options(w) for w in plan.workloads}
    assert opts == {"mail": {"thinktime": "3000000", "thinktime_blocks": "1848"},
                    "paced": {"rate_iops": "375,125", "rate_process": "poisson"},
                    "burst": {"thinktime": "3000000", "thinktime_blocks": "2000"},
                    "user": {"thinktime": "5000", "thinktime_blocks": "4"},
                    "hot": {"random_distribution": "zoned:80/10:20/90"},
                    "zipf": {"random_distribution": "zipf:1.2"}}


def test_lab_and_hosts_examples_are_valid():
    lab = load_plan_text(HEAD.format(t="lab:iscsi", h=8) + _block("[lab]"), source="docs lab")
    assert (lab.lab.hosts, lab.lab.nics_per_host, lab.lab.storage_ports, lab.lab.link.mtu) == (8, 2, 2, 1500)
    hosts = load_plan_text(HEAD.format(t="/tmp/a", h=2) + _block("[[hosts]]"), source="docs hosts")
    assert [h.agent for h in hosts.hosts] == ["ssh://root@esx1", "fio://10.0.0.12:8765"]


def test_every_command_in_the_table_exists():
    commands = set(re.findall(r"^\| `protolab (\w+)", README, re.M))
    assert {"run", "validate", "plans", "workloads", "doctor", "limits", "report", "compare", "lab"} <= commands
    for c in commands:
        p = run_cli(c, "--help", timeout=60)
        assert p.returncode == 0 and "Usage" in p.stdout, (c, p.stderr)


def test_every_link_resolves_inside_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) >= 9
    for page in pages:
        for target in LINK.findall(page.read_text()):
            assert "://" not in target, f"{page.name} links outside the repository: {target}"
            path = (page.parent / target).resolve()
            assert path.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
            assert path.exists(), f"{page.name} links to {target}, which does not exist"
        assert "../shared" not in page.read_text(), f"{page.name} names a file outside the repository"
    assert {t for t in LINK.findall(README)} >= {f"docs/{p.name}" for p in pages[1:]}  # the README links every page


def test_the_security_page_names_tests_that_exist():
    section = (ROOT / "docs" / "security.md").read_text()
    names = set(re.findall(r"`(?:tests/\w+/)?(test_\w+\.py)`", section))
    assert len(names) >= 7
    found = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert names <= found, names - found
    from protolab.trust import PRIVATE_BASE

    assert f"`{PRIVATE_BASE}`" in section and "--require-hashes" in (ROOT / "scripts/install-deps.sh").read_text()
    assert "## Security" in README
