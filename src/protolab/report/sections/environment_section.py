"""Where the run was measured: the machine and tools (the run's provenance), the run's status, and a warning when
other work kept the machine busy."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ..report_data import ReportData
from .section import Page, Section

#: The provenance report.md names in one line (by its field names), and the rows of report.html's table.
MD_FIELDS = ("kernel", "fio_version", "cpu_model", "cpus")
TABLE_FIELDS = [("protolab", "protolab"), ("fio_version", "fio"), ("kernel", "kernel"), ("cpu_model", "CPU"),
                ("cpus", "CPUs"), ("machine", "machine"), ("hostname", "host"), ("python", "Python")]


@dataclass(frozen=True)
class EnvironmentModel:
    provenance: dict[str, str]  # field → value, the fields the run recorded
    status: str
    busy: str | None
    device: dict | None = None  # the lab's device model as its testbed described it (lab.device)
    attached: tuple[dict, ...] = ()  # targets protolab attached on the hosts (run.attaching.Attached.record)

    def attach_rows(self) -> list[tuple[str, str, list[str], str]]:
        """(host and target, what was asked and what it gave, the kernel's account in a line per session, controller
        or mount, and in full) per attached target."""
        out = []
        for a in self.attached:
            devices = ", ".join(str(d) for d in a.get("devices") or []) or "?"
            found = "; ".join(str(f) for f in a.get("found") or [])
            gave = f"{a.get('asked')} → {devices}" + (f" (found: {found})" if found else "")
            out.append((f"{a.get('host')}: {a.get('target')}", gave, [str(s) for s in a.get("summary") or []],
                        str(a.get("kernel") or "")))
        return out

    def device_rows(self) -> list[tuple[str, str]]:
        """(label, value) rows of the pool's device model: name, figures, source, the cache of each path above
        it, and the stack's overhead the cells ran with ([] without a lab)."""
        d = self.device
        if not d:
            return []
        rows = [("device model", f"{d.get('model')}: {d.get('figures')}")]
        if d.get("source"):
            rows.append(("device model source", str(d["source"])))
        if d.get("swept"):
            rows.append(("device model swept", str(d["swept"])))
        for proto, cache in sorted((d.get("caches") or {}).items()):
            rows.append((f"cache above the model ({proto})", str(cache)))
        if d.get("overhead_us") is not None:
            writes = (f"; {d['write_overhead_us']:g} µs per write acknowledged from its write-back cache, inside "
                      "that time" if d.get("write_overhead_us") is not None else "")
            rows.append(("stack overhead", f"{d['overhead_us']:g} µs per request at 1 outstanding I/O, measured "
                         "when the lab came up and again at its snapshot, and counted inside the model's service "
                         f"time{writes}"))
        return rows

    def line(self) -> str:
        """report.md's 'kernel 6.1, fio_version fio-3.33, …' ('' when none of them is known)."""
        return ", ".join(f"{k} {self.provenance[k]}" for k in MD_FIELDS if k in self.provenance)

    def table(self) -> list[tuple[str, str]]:
        """report.html's (label, value) rows."""
        return [(label, self.provenance[k]) for k, label in TABLE_FIELDS if k in self.provenance]


class EnvironmentSection(Section[EnvironmentModel]):
    name = "environment"
    title = "Environment"
    nav = "environment"

    def build(self, data: ReportData) -> EnvironmentModel:
        prov = data.manifest.provenance
        known = {k: str(getattr(prov, k)) for k, _ in TABLE_FIELDS
                 if prov is not None and getattr(prov, k, None) not in (None, "")}
        testbed = data.manifest.testbed or {}
        device = testbed.get("device") if isinstance(testbed.get("device"), dict) else None
        return EnvironmentModel(known, data.manifest.status or "unknown", data.notes.get("busy"), device,
                                tuple(data.manifest.attached))

    def markdown(self, m: EnvironmentModel) -> list[str]:
        env = m.line()
        out = ["", f"## {self.title}", "", f"Environment: {env}." if env else "", f"Status: {m.status}."]
        out += [f"{label[0].upper()}{label[1:]}: {value}." for label, value in m.device_rows()]
        if m.attached:
            out += ["", "Attached on the hosts, as each host's kernel reported it (in full in report.html and "
                    "manifest.json):", ""]
            for where, gave, short, _ in m.attach_rows():
                out += [f"- {where}: {gave}.", *(f"  - {s}" for s in short)]
        return out + (["", f"Warning: {m.busy}."] if m.busy else [])

    def html(self, m: EnvironmentModel, page: Page) -> Markup:
        return page.render("environment", title=self.title, m=m)
