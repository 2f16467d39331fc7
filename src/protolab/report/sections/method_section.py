"""How the figures were made: the matrix and its interleaving, repeats, the baseline, when a difference is called
(at the run's significance level and noise band), and what "limited by" means."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from ..report_data import ReportData
from .section import Page, Section

LIMITED_BY = ("\"Limited by\": the wire at ≥ 90 % of its modelled ceiling, else the array at ≥ 90 % of its device "
              "model's saturation, else a thread, job, process or the run at ≥ 90 % of the cores it can use (with "
              "its wait for one), else a role waiting for a CPU ≥ 25 % of the window; \"none\": latency-bound, or "
              "storage-bound without a device model (docs/report.md: The bottleneck, named).")


@dataclass(frozen=True)
class MethodModel:
    text: str  # the plan's matrix and method in one sentence
    baseline: str
    alpha: float
    noise_pct: str  # '2'
    out_of_step: str = ""  # the windows whose fio servers' statuses fell out of step ('' when none did)
    caches: str = ""  # the page caches dropped before the windows (method.drop_caches; '' when none were asked)

    def rules(self) -> str:
        """report.md's paragraph: when a difference is called, and how to read the tables."""
        return (f"A difference is called only when a Holm-corrected Welch t-test on log values (≥ 3 repeats per side) "
                f"gives p < {self.alpha:g} and the 95 % interval lies outside the ±{self.noise_pct} % noise band; "
                "otherwise: no clear difference; with fewer than 3 repeats on a side: not tested. \"Within\" is "
                "claimed only by an equivalence test (TOST at the noise band, Holm-corrected). Latency at fixed "
                "outstanding I/Os is service time. Above 100 = more IOPS / more latency / more CPU. " + LIMITED_BY)


def out_of_step(data: ReportData) -> str:
    """One sentence on the windows whose fio servers' statuses fell out of step ('' when none did)."""
    late = [r for r in data.records if r.out_of_step_s is not None]
    if not late:
        return ""
    cells = ", ".join(f"{r.cell_id} ({r.out_of_step_s:.1f} s)" for r in late[:6]) + (" …" if len(late) > 6 else "")
    return (f"{len(late)} of {len(data.records)} windows had fio servers' statuses out of step by "
            f"{min(r.out_of_step_s for r in late):.1f}–{max(r.out_of_step_s for r in late):.1f} s (a busy machine "
            f"delays fio's status timer), so their window boundaries are uncertain by as much: {cells}.")


def caches_dropped(data: ReportData) -> str:
    """One sentence on the page caches dropped before the windows, from the records ('' when none was asked)."""
    asked = data.plan.method.drop_caches if data.plan is not None else None
    dropped = [r for r in data.records if r.caches_dropped]
    if not dropped:
        return "" if asked is None else (f"The plan asks for {asked.summary()}, but no window records a drop "
                                         "(measured by a protolab that did not drop them).")
    hosts: dict[str, list[tuple[int | None, int | None]]] = {}
    for r in dropped:
        for d in r.caches_dropped:
            hosts.setdefault(d.host, []).append((d.cached_kib_before, d.cached_kib_after))

    def mib(values: list[int | None]) -> str:
        known = sorted(v for v in values if v is not None)
        return f"{known[len(known) // 2] / 1024:,.0f}" if known else "–"

    each = "; ".join(f"{h}, Cached {mib([b for b, _ in v])} → {mib([a for _, a in v])} MiB" for h, v in hosts.items())
    return (f"Page caches dropped before {len(dropped)} of {len(data.records)} windows (sync; echo 3 > "
            f"/proc/sys/vm/drop_caches), /proc/meminfo's Cached before → after each drop, median: {each}.")


class MethodSection(Section[MethodModel]):
    name = "method"
    title = "Method"
    nav = "method"

    def build(self, data: ReportData) -> MethodModel:
        plan = data.plan
        if plan is None:
            text = "The stored plan could not be read; the method is not known."
        else:
            text = (f"{len(plan.configurations)} configurations × {len(plan.workloads)} workloads × "
                    f"{len(plan.load_points)} load points; {plan.method_summary()}; configurations interleaved at "
                    "each load point so that drift of the machine does not masquerade as a difference.")
        return MethodModel(text, data.baseline, data.alpha, f"{data.noise * 100:g}", out_of_step(data),
                           caches_dropped(data))

    def markdown(self, m: MethodModel) -> list[str]:
        return (["", f"## {self.title}", "", m.text, "", m.rules()] + (["", m.caches] if m.caches else [])
                + (["", m.out_of_step] if m.out_of_step else []))

    def html(self, m: MethodModel, page: Page) -> Markup:
        return page.render("method", title=self.title, m=m, limited_by=LIMITED_BY)
