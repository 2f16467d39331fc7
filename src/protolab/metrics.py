"""Every metric once: its key (also its cells.csv column), unit, words, direction, where it is read from, and
which testbeds have it. Findings, tables, charts, pairs, seed claims, compare and cells.csv ask this module.

A metric is *compared* (each configuration against the baseline, tested, in sentences and charts) or
*tabled* (shown as a figure beside the compared ones). Its value comes from one of three sources: the fio
result (``result``: an attribute of `CellResult`), a merged percentile of the result (``percentile``), or the
figures derived from the record's counters (``figures``: an attribute of `analysis.derived.Figures`).

`FIGURES` names every other derived figure (totals behind the per-I/O figures, flags, per-port maps), so that
a figure no one names cannot slip in: a test checks `Figures` against both.

Adding a metric: one `Metric` in `METRICS` (and, for a ``figures`` source, its formula in
`analysis.derived.derive` and a field in `Figures`). Everything else follows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

Source = Literal["result", "percentile", "figures"]


@dataclass(frozen=True)
class Metric:
    """A measured figure per cell; above 100 % of the baseline always means 'more of it'."""

    key: str  # also its cells.csv column and its tables' file name
    title: str  # chart titles: "IOPS", "average service time"
    unit: str
    short: str  # Markdown table headers: "avg µs"
    noun: str  # sentences: "{more|less} {noun}"
    more: str  # word for a ratio above 1: "more", "higher"
    less: str
    better: Literal["higher", "lower"]  # which way is good for the user
    source: Source
    field: str  # the attribute of the source (the percentile's name for ``percentile``)
    compared: bool = True  # tested against the baseline; False: a figure shown beside them (tabled)
    telemetry: bool = False  # measured only when telemetry ran
    testbeds: tuple[str, ...] = ()  # only these testbeds have it ("vm"); () = every testbed

    @property
    def above(self) -> str:
        """What above 100 % of the baseline means, for chart notes: 'more IOPS', 'more latency'."""
        return f"more {self.noun}" if self.unit == self.noun else f"more {_KIND.get(self.unit, self.noun)}"


_KIND = {"µs": "latency", "CPU µs/I/O": "CPU", "packets/I/O": "packets"}

_CPU = "CPU µs/I/O"

#: The metrics of the report, in report order (compared ones first). Latency titles say "service time":
#: closed-loop latency (fixed outstanding I/Os) is the storage's service time.
METRICS: dict[str, Metric] = {m.key: m for m in [
    Metric("iops", "IOPS", "IOPS", "IOPS", "IOPS", "more", "fewer", "higher", "result", "iops"),
    Metric("lat_mean_us", "average service time", "µs", "avg µs", "average service time", "higher", "lower", "lower",
           "result", "lat_mean_us"),
    Metric("lat_p99_us", "p99 service time", "µs", "p99 µs", "p99 service time", "higher", "lower", "lower",
           "percentile", "p99"),
    Metric("cpu_us_per_io_loadgen", "load-generator CPU per I/O", _CPU, "LG CPU µs/IO", "load-generator CPU per I/O",
           "more", "less", "lower", "figures", "cpu_us_per_io_loadgen", telemetry=True),
    Metric("cpu_us_per_io_server", "server CPU per I/O", _CPU, "srv CPU µs/IO", "server CPU per I/O", "more", "less",
           "lower", "figures", "cpu_us_per_io_server", telemetry=True),
    # the whole machine's CPU per I/O (every role and the kernel's work for it); the seeds' "host CPU" is the load
    # host's, the load generator's above (fio with its userspace initiator)
    Metric("cpu_us_per_io_total", "machine CPU per I/O", _CPU, "machine CPU µs/IO", "machine CPU per I/O", "more",
           "less", "lower", "figures", "cpu_us_per_io_total", telemetry=True),
    Metric("packets_per_io", "packets per I/O", "packets/I/O", "pkts/IO", "packets per I/O", "more", "fewer", "lower",
           "figures", "packets_per_io", telemetry=True),
    # VMs as load hosts: the studies' deciding figure, the hypervisor's CPU (QEMU: vCPU + I/O threads)
    Metric("cpu_us_per_io_hypervisor", "hypervisor CPU per I/O", _CPU, "HV CPU µs/IO", "hypervisor CPU per I/O",
           "more", "less", "lower", "figures", "cpu_us_per_io_hypervisor", telemetry=True, testbeds=("vm",)),
    Metric("cpu_us_per_io_guest", "guest CPU per I/O", _CPU, "guest CPU µs/IO", "guest CPU per I/O", "more", "less",
           "lower", "figures", "cpu_us_per_io_guest", telemetry=True, testbeds=("vm",)),
    # the kernel data paths' targets as the storage server guest's own kernel counts its CPU (/proc/stat); its
    # QEMU's threads are in the server CPU above. Tabled: only kernel data paths have it
    Metric("cpu_us_per_io_server_guest", "server guest CPU per I/O", _CPU, "srv guest CPU µs/IO",
           "server guest CPU per I/O", "more", "less", "lower", "figures", "cpu_us_per_io_server_guest",
           compared=False, telemetry=True, testbeds=("vm",)),
    Metric("mbps", "throughput", "MB/s", "MB/s", "throughput", "more", "less", "higher", "result", "mbps",
           compared=False),
    Metric("wire_bytes_per_io", "wire bytes per I/O", "B/I/O", "wire B/IO", "wire bytes per I/O", "more", "fewer",
           "lower", "figures", "wire_bytes_per_io", compared=False, telemetry=True),
    # the exchange study's percentile (its objective and its seed's figure); tabled, and a seed claim may test it
    Metric("lat_p95_us", "p95 service time", "µs", "p95 µs", "p95 service time", "higher", "lower", "lower",
           "percentile", "p95", compared=False),
]}

#: Derived figures that are not metrics (`analysis.derived.Figures`), and whether cells.csv carries each.
FIGURES: dict[str, bool] = {
    "ios": False, "loadgen_cpu_s": True, "server_cpu_s": True, "server_cpu_s_by_process": False,
    "machine_cpu_s": True, "window_s": True, "cpu_source": False, "cpu_weight": False, "role_cpu_s": False,
    "loadgen_cpu_s_fio": False, "cpu_us_per_io_role": False, "machine_other_cpu_s": False,
    "machine_other_share": False, "machine_busy_other_work": True, "packets_counted_as": True,
    "frames_per_io": False, "segments_per_io": False, "hypervisor_cpu_s": True, "cpu_us_per_io_hv_vcpu": True,
    "cpu_us_per_io_hv_io": True, "bytes_by_port": False, "server_guest_cpu_s": True,
    "share_by_port": True,  # in cells.csv as each storage port's % of the bytes, in port order: '25.1/24.9/…'
}


def compared() -> list[str]:
    """The compared metrics' keys, in report order."""
    return [k for k, m in METRICS.items() if m.compared]


def tabled() -> list[str]:
    """The tabled metrics' keys (figures shown beside the compared ones), in report order."""
    return [k for k, m in METRICS.items() if not m.compared]


def title(key: str) -> str:
    """A metric's title; the key itself for a name the registry does not know."""
    return METRICS[key].title if key in METRICS else key


class View(Mapping[str, Metric]):
    """The compared (or the tabled) metrics of the registry, read at each use: a metric added to `METRICS`
    shows wherever the view is asked."""

    def __init__(self, compared: bool):
        self._compared = compared

    def __getitem__(self, key: str) -> Metric:
        m = METRICS[key]
        if m.compared != self._compared:
            raise KeyError(key)
        return m

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, m in METRICS.items() if m.compared == self._compared])

    def __len__(self) -> int:
        return sum(1 for m in METRICS.values() if m.compared == self._compared)
