"""A run's environment fingerprint: what its manifest records of where and with what it measured (kernel, fio,
link rate and MTU, the pool's device model, the load hosts), and which of it makes two runs unlike."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..analysis.compare import device_model, plan_data
from ..results.manifest import Manifest

#: What makes two runs unlike for `protolab check` (refused without --force): (field, words).
UNLIKE = (("plan", "plan name"), ("fio", "fio version"), ("device", "device model"))


@dataclass(frozen=True)
class Fingerprint:
    """Where a run measured, in words ('' where the manifest does not say)."""

    plan: str
    kernel: str = ""
    fio: str = ""
    cpu: str = ""
    host: str = ""  # the machine protolab ran on
    link: str = ""  # the lab's link: rate and MTU (per configuration where one overrides it)
    device: str = ""  # the lab pool's device model
    hosts: str = ""  # the load hosts

    def text(self) -> str:
        """'kernel 6.1, fio fio-3.33, link 1GbE MTU 9000, …' (the fields the manifest recorded)."""
        return ", ".join(f"{f.name} {getattr(self, f.name)}" for f in fields(self)
                         if f.name != "plan" and getattr(self, f.name))

    def as_dict(self) -> dict[str, str]:
        """The fields by name (JSON and the catalogue)."""
        return asdict(self)


def _link(plan: dict[str, Any]) -> str:
    """'1GbE MTU 9000' for the lab's link, with each configuration's own link after it ('' without a lab)."""
    lab = plan.get("lab")
    if not isinstance(lab, dict):
        return ""
    base = lab.get("link") if isinstance(lab.get("link"), dict) else {}

    def words(link: dict[str, Any]) -> str:
        return f"{link.get('rate') or 'unshaped'} MTU {link.get('mtu', 1500)}"

    out = [words(base)]
    for c in plan.get("configurations") or []:
        own = c.get("link") if isinstance(c, dict) else None
        if isinstance(own, dict) and own:
            out.append(f"{c.get('name')}: {words({**base, **own})}")
    return "; ".join(out)


def _hosts(manifest: Manifest, plan: dict[str, Any]) -> str:
    testbed = manifest.testbed or {}
    hosts = testbed.get("hosts")
    if isinstance(hosts, list):
        return ", ".join(map(str, hosts))
    if isinstance(hosts, int) and testbed.get("kind") in ("lab", "vm"):
        return f"{hosts} lab host(s)"
    names = [h.get("name") for h in plan.get("hosts") or [] if isinstance(h, dict)]
    return ", ".join(map(str, names)) or ""


def fingerprint(manifest: Manifest) -> Fingerprint:
    """The run's fingerprint from its manifest (provenance of the run's first session, the stored plan, the
    testbed's own description)."""
    try:
        plan = plan_data(manifest)
    except (ValueError, TypeError):  # a stored plan no migration reads: the provenance still says much
        plan = {}
    prov = manifest.first_provenance
    name = plan.get("name") or (manifest.plan or {}).get("name") or ""
    return Fingerprint(plan=str(name), kernel=str(prov.kernel or "") if prov else "",
                       fio=str(prov.fio_version or "") if prov else "", cpu=str(prov.cpu_model or "") if prov else "",
                       host=str(prov.hostname or "") if prov else "", link=_link(plan), device=device_model(plan),
                       hosts=_hosts(manifest, plan))


def unlike(a: Fingerprint, b: Fingerprint) -> list[str]:
    """What makes two runs unlike: 'fio version (fio-3.33 against fio-3.36)', … ([] when alike)."""
    return [f"{words} ({getattr(a, f) or 'none'} against {getattr(b, f) or 'none'})" for f, words in UNLIKE
            if getattr(a, f) != getattr(b, f)]


def changes(a: Fingerprint, b: Fingerprint) -> list[str]:
    """What changed of the environment that does not make two runs unlike: 'link (100mbit MTU 1500 against 1GbE MTU
    1500)', ``a``'s value first ([] when nothing did)."""
    return [f"{f} ({getattr(a, f) or 'none'} against {getattr(b, f) or 'none'})" for f in changed(a, b)
            if f not in dict(UNLIKE)]


def changed(a: Fingerprint, b: Fingerprint) -> list[str]:
    """The fields that differ from one run to the next, by name ('kernel', 'fio', …; the plan name left out)."""
    return [f.name for f in fields(a) if f.name != "plan" and getattr(a, f.name) != getattr(b, f.name)]
