"""The crossover's figures (analysis.crossover, `model.CrossoverData`), computed once when the report's data is
built: with a swept service time or link rate, every configuration against the baseline at every swept point and
the model's prediction; with or without a sweep, each configuration's added time per I/O, where it starts to cost
more than the band and, over a RAM pool, what it would cost on a slow array. report.sections.crossover_section puts
them in words, with each configuration's crossover sentence made here."""

from __future__ import annotations

from ..analysis.crossover import AtPoint, Obs, added_times, band_of, cost_at, crossover, matters_below_us, sentence
from ..plan.coordinates import point_of
from ..plan.model import Plan
from ..plan.storage import PRESETS, parse_time_us
from ..plan.topology import LabSpec
from .report_data import CrossoverData, RunData, is_closed_loop

#: The slow array the RAM pool's reader is pointed at: TR-3808's (plan.storage's hdd-array preset and its source).
SLOW = "hdd-array"


def _lab(plan: Plan) -> LabSpec | None:
    lab = getattr(plan, "lab", None)
    return LabSpec.model_validate(lab) if isinstance(lab, dict) else lab  # a manifest's plan keeps [lab] as data


def crossover_data(run: RunData) -> CrossoverData | None:
    """The run's crossover figures; None without a readable plan, or with another point coordinate (a fill level)
    beside the sweep, which the model does not take."""
    plan = run.plan
    if plan is None:
        return None
    sweep = getattr(plan, "sweep", None)
    axes = sweep.axes() if sweep is not None else []
    swept = axes[0].name if axes else None
    band, source = band_of(plan)
    if len(axes) > 1:  # one crossover per swept coordinate, the other held: not with both in one run
        return CrossoverData(swept, band, source, both=True)
    recs = [r for r in run.records if not r.failed and is_closed_loop(plan, r.workload)]
    if any(k != swept for r in recs for k, _ in point_of(r).outer):
        return None
    obs = [Obs.of_record(r, swept or "service_time") for r in recs]
    # the model's o and d are times at a service time: a swept link rate gets the measurement only
    added = added_times(obs, run.baseline) if swept in (None, "service_time") else {}
    lab = _lab(plan)
    ram = lab is not None and lab.device.is_ram
    P = lab.device.servers if lab is not None and not ram else None
    on_time = swept == "service_time"
    pts = [] if swept is None else crossover(obs, run.baseline, band, parallelism=P if on_time else None,
                                             added=added if on_time else None)
    groups: dict[tuple[str, int, str, str], list[AtPoint]] = {}
    for p in pts:
        groups.setdefault((p.workload, p.total_oio, p.load, p.configuration), []).append(p)
    said = {k: sentence(ps, run.baseline, band, swept) for k, ps in groups.items()} if swept is not None else {}
    below = {k: matters_below_us(a.o_us, band) for k, a in added.items() if a.o_us > 0}
    slow_us = parse_time_us(PRESETS[SLOW].service_time, "service_time") if ram else 0.0
    cost = {k: cost_at(a.o_us, slow_us + a.d_us) for k, a in added.items() if ram and a.o_us > 0}
    return CrossoverData(swept, band, source, added=added, points=pts, parallelism=P, ram=ram, sentences=said,
                         below_us=below, slow=SLOW if ram else "", slow_cost=cost)
