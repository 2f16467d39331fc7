"""`protolab check`'s acceptance rules as data: per metric a tolerated change of the run against its baseline,
'iops >= -5 %' (at most 5 % fewer IOPS) or 'lat_p99_us <= +10 %' (at most 10 % more p99 latency).

A rules file is TOML with one key, ``rules``, a list of such strings:

    rules = ["iops >= -5 %", "lat_p99_us <= +10 %"]

Without ``--rules`` the built-in `DEFAULT_RULES` apply. A metric is a key of protolab's metric registry
(protolab.metrics). Errors name the file, the rule and what to write instead.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtolabError
from ..metrics import METRICS

#: The built-in rules: throughput may fall 5 %, latency and CPU per I/O may rise 10 %. CPU per I/O is the load
#: generator's and the storage server's, each counted in its own cgroup; the machine's (cpu_us_per_io_total) counts
#: every other program's work too, so on a shared machine a repeat would break it (analysis.derived: context only).
DEFAULT_RULES = ("iops >= -5 %", "mbps >= -5 %", "lat_mean_us <= +10 %", "lat_p99_us <= +10 %",
                 "cpu_us_per_io_loadgen <= +10 %", "cpu_us_per_io_server <= +10 %")

_RULE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(>=|<=)\s*([+-]?\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class Rule:
    """A tolerated change of one metric, in % of the baseline's median: ``>=`` a floor, ``<=`` a ceiling."""

    metric: str
    op: str  # ">=" or "<="
    limit_pct: float

    def text(self) -> str:
        """'iops >= -5 %'."""
        return f"{self.metric} {self.op} {self.limit_pct:+g} %"

    def holds(self, change_pct: float) -> bool:
        """Whether a change (in %) lies within the tolerance."""
        return change_pct >= self.limit_pct if self.op == ">=" else change_pct <= self.limit_pct


def parse_rule(text: object, where: str) -> Rule:
    """One rule from its text; ProtolabError naming ``where`` and the form to write."""
    m = _RULE.match(text) if isinstance(text, str) else None
    if m is None:
        raise ProtolabError(f"{where}: {text!r} is not a rule; write METRIC >= -N % or METRIC <= +N %, "
                            "e.g. 'iops >= -5 %'")
    metric, op, limit = m.group(1), m.group(2), float(m.group(3))
    if metric not in METRICS:
        raise ProtolabError(f"{where}: unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    return Rule(metric, op, limit)


def default_rules() -> list[Rule]:
    """The built-in rules."""
    return [parse_rule(t, "built-in rules") for t in DEFAULT_RULES]


def load_rules(path: Path) -> list[Rule]:
    """The rules of a TOML file (see the module's text); ProtolabError (one line) for anything else."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ProtolabError(f"--rules {path}: no such file; give a TOML file with rules = [\"iops >= -5 %\", …]") \
            from None
    except IsADirectoryError:
        raise ProtolabError(f"--rules {path}: a directory; give a TOML file") from None
    except OSError as e:
        raise ProtolabError(f"--rules {path}: cannot read it ({e.strerror})") from None
    except ValueError as e:  # tomllib.TOMLDecodeError, or bytes that are not UTF-8
        raise ProtolabError(f"{path}: not TOML ({e}); write rules = [\"iops >= -5 %\", …]") from None
    extra = sorted(set(data) - {"rules"})
    if extra:
        raise ProtolabError(f"{path}: unknown key {extra[0]!r}; a rules file has one key, "
                            "rules = [\"iops >= -5 %\", …]")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise ProtolabError(f"{path}: field 'rules': give a non-empty list of rules, e.g. rules = [\"iops >= -5 %\"]")
    return [parse_rule(t, f"{path}: rules[{i}]") for i, t in enumerate(rules)]
