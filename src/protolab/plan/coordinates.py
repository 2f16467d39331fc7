"""A cell's coordinates: the named dimensions the expansion gives it, and what each means to the analysis.

Every record stores its coordinates (`coords`): workload, configuration, load (the load point's place in the
plan's ladder), repeat, and any a study adds — a stage step (`fill = 25`), an aging step (`stage = "age"`,
`age_s`), and whatever a new dimension brings. The analysis and the report never name them one by one: they
group records by *role*:

- ``workload``: each workload is analysed on its own;
- ``configuration``: what is compared (against the baseline) at equal points;
- ``point``: where configurations are compared — the load point and every other dimension that changes what
  is measured (a fill level, a device model, …); a coordinate this module does not know is a point coordinate;
- ``replicate``: repeats of the same point, pooled by the statistics;
- ``series``: a position inside one long measurement (an aging step); pooled like repeats at its point, and
  read as a time series by the long-run analysis.

`point_of` gives a record's `Point`: its point coordinates, their order (a stage's steps in their own order,
then the load ladder) and its label ('fill 25 % · 1×4×4=16'). A new dimension is one entry in `ROLES` (when it
is not a point) and, if its values read with a unit, one in `UNITS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Protocol

Role = Literal["workload", "configuration", "point", "replicate", "series"]

#: Roles of the coordinates that are not points; any other coordinate is a point coordinate.
ROLES: dict[str, Role] = {"workload": "workload", "configuration": "configuration", "load": "point",
                          "repeat": "replicate", "stage": "series", "age_s": "series"}
#: How a point coordinate's value reads in a label: 'fill 25 %'.
UNITS: dict[str, str] = {"fill": "%", "service_time": "µs", "link_rate": "Mbit/s", "rate": "IOPS"}
#: What a point coordinate's axis shows, in the report's words.
AXES: dict[str, str] = {"fill": "fill level (% of each target written)",
                        "service_time": "the array's service time (µs; plan.sweep)",
                        "link_rate": "every lab link's rate (Mbit/s; plan.sweep)",
                        "rate": "the offered rate (IOPS in all; plan.rate_ladder)",
                        "fault": "the fault in the measured window (\"none\": no fault; plan.faults)"}
#: The load ladder's coordinate: always the innermost of a point.
LOAD = "load"


def role(name: str) -> Role:
    """The role of a coordinate (see the module's text)."""
    return ROLES.get(name, "point")


def value_label(name: str, value: Any) -> str:
    """'fill 25 %' for a coordinate and its value."""
    unit = UNITS.get(name)
    return f"{name} {value} {unit}" if unit else f"{name} {value}"


def value_text(axis: str, v: float) -> str:
    """A swept value in words: '150 µs', '1.5 ms' (service time); '100 Mbit/s', '1 Gbit/s' (link rate)."""
    if axis == "link_rate":
        return f"{v / 1000:g} Gbit/s" if v >= 1000 else f"{v:g} Mbit/s"
    return f"{v / 1000:g} ms" if v >= 1000 else f"{v:g} µs"


def _rank(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0, str(value))


class _Placed(Protocol):
    coords: dict[str, str | int]
    hosts: int
    streams_per_host: int
    oio_per_stream: int
    total_oio: int


@dataclass(frozen=True)
class Point:
    """Where configurations are compared: the point coordinates of a cell (load last) and their label."""

    coords: tuple[tuple[str, Any], ...]
    label: str = field(compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self.coords))  # a study's tables hash its points ~10⁶ times

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __getstate__(self) -> dict[str, Any]:  # a string's hash differs between processes: never pickled
        return {"coords": self.coords, "label": self.label}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self.__post_init__()

    def get(self, name: str, default: Any = None) -> Any:
        """The value of one coordinate of the point."""
        return next((v for k, v in self.coords if k == name), default)

    @property
    def outer(self) -> tuple[tuple[str, Any], ...]:
        """The point's coordinates other than the load point (a stage step, a device model …)."""
        return tuple((k, v) for k, v in self.coords if k != LOAD)

    @property
    def outer_label(self) -> str:
        """'fill 25 %' (the outer coordinates' label), '' without any."""
        return " · ".join(value_label(k, v) for k, v in self.outer)

    @property
    def slug(self) -> str:
        """A file-name part: '0' for the first load point, 'fill25-0' at a stage step."""
        return "-".join([*(f"{k}{v}" for k, v in self.outer), str(self.get(LOAD))])

    @property
    def order(self) -> tuple:
        """Sort key: outer coordinates by name and value, then the load ladder."""
        return tuple((k, _rank(v)) for k, v in self.coords)

    def __lt__(self, other: "Point") -> bool:
        return self.order < other.order


def load_label(hosts: int, streams: int, oio: int, total: int | None = None) -> str:
    """'1×4×4=16': hosts × streams per host × OIO per stream = outstanding I/Os in all (``total``: a record's own,
    else their product). The one form of a load point wherever it is shown: tables, charts, sentences, the progress
    line and the plan's warnings."""
    return f"{hosts}×{streams}×{oio}={hosts * streams * oio if total is None else total}"


_CACHE: dict[int, tuple[Any, Point]] = {}
_SAME: dict[tuple[tuple, str], Point] = {}


def point_of(rec: _Placed) -> Point:
    """A record's point (computed once per record: every table asks for it)."""
    hit = _CACHE.get(id(rec))
    if hit is not None and hit[0] is rec:
        return hit[1]
    outer = sorted((k, v) for k, v in rec.coords.items() if k != LOAD and role(k) == "point")
    prefix = "".join(value_label(k, v) + " · " for k, v in outer)
    point = Point((*outer, (LOAD, rec.coords[LOAD])),
                  prefix + load_label(rec.hosts, rec.streams_per_host, rec.oio_per_stream, rec.total_oio))
    point = _SAME.setdefault((point.coords, point.label), point)  # one object per point: dict keys match by identity
    if len(_CACHE) > 200_000:
        _CACHE.clear()
        _SAME.clear()
    _CACHE[id(rec)] = (rec, point)
    return point


def points(records: Iterable[_Placed]) -> list[Point]:
    """The distinct points of ``records``, in order."""
    return sorted({point_of(r) for r in records})


def outer_steps(records: Iterable[_Placed]) -> list[tuple[tuple[str, Any], ...]]:
    """The distinct outer coordinates (stage steps …) of ``records``, in order; [()] when there are none."""
    steps = {point_of(r).outer for r in records}
    return sorted(steps, key=lambda s: tuple((k, _rank(v)) for k, v in s)) or [()]
