"""The plan: the matrix and method in one line, then each configuration (target, engine, link) and each workload
(access spec, load points)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ...conventions import fio_unescaped
from ..markdown import md_table
from ..report_data import ReportData
from .section import Page, Section

CONFIG_HEADERS = ["configuration", "target", "engine", "link", "description"]
WORKLOAD_HEADERS = ["workload", "access spec", "load points (hosts × streams × OIO)"]


@dataclass(frozen=True)
class ConfigurationLine:
    name: str
    target: str
    engine: str
    link: str
    description: str


@dataclass(frozen=True)
class WorkloadLine:
    name: str
    spec: str
    loads: str


@dataclass(frozen=True)
class PlanModel:
    matrix: str | None  # "3 configurations × 2 workloads × 2 load points; <method>" (None: the plan is unreadable)
    baseline: str
    configurations: list[ConfigurationLine]
    workloads: list[WorkloadLine]


def _configurations(data: ReportData) -> list[ConfigurationLine]:
    plan = data.plan
    targets = {k: fio_unescaped(str(v)) for k, v in data.manifest.targets.items()}  # older runs stored fio's '\\:'
    out = []
    for name in data.configurations:
        c = plan.configuration(name) if plan and any(x.name == name for x in plan.configurations) else None
        if c is None:
            out.append(ConfigurationLine(name, str(targets.get(name, "")), "", "", ""))
            continue
        out.append(ConfigurationLine(name, plan.target_of(c).url, c.ioengine or "(protocol's own)",
                                     ", ".join(f"{k}={v}" for k, v in c.link.items()),
                                     c.description or str(targets.get(name, ""))))
    return out


def _workloads(data: ReportData) -> list[WorkloadLine]:
    out = []
    for w in data.workloads:
        spec = next((x for x in data.plan.workloads if x.name == w), None) if data.plan else None
        loads = list(dict.fromkeys(r.load_label for r in data.rows if r.workload == w))
        out.append(WorkloadLine(w, spec.summary() if spec else "", "; ".join(loads)))
    return out


class PlanSection(Section[PlanModel]):
    name = "plan"
    title = "Plan"
    nav = "plan"

    def build(self, data: ReportData) -> PlanModel | None:
        if not data.configurations:
            return None
        p = data.plan
        matrix = (f"{len(p.configurations)} configurations × {len(p.workloads)} workloads × {len(p.load_points)} "
                  f"load points; {p.method_summary()}") if p else None
        return PlanModel(matrix, data.baseline, _configurations(data), _workloads(data))

    def markdown(self, m: PlanModel) -> list[str]:
        out = ["", f"## {self.title}", ""]
        if m.matrix:
            out += [f"{m.matrix}. Baseline **{m.baseline}** = 100.", ""]
        rows = [[c.name + (" (baseline)" if c.name == m.baseline else ""), f"`{c.target}`" if c.target else "",
                 c.engine, c.link, c.description] for c in m.configurations]
        out += [md_table(CONFIG_HEADERS, rows, left=CONFIG_HEADERS), "",
                md_table(WORKLOAD_HEADERS, [[w.name, w.spec, w.loads] for w in m.workloads], left=WORKLOAD_HEADERS)]
        return out

    def html(self, m: PlanModel, page: Page) -> Markup:
        return page.render("plan", title=self.title, m=m, config_headers=CONFIG_HEADERS,
                           workload_headers=WORKLOAD_HEADERS)
