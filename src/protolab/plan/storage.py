"""The pool's device model (`[lab.storage]`): the array under every path alike, and its presets with their sources.

A model is a service time (fixed, or a mean with a spread: uniform over mean ± spread), a parallelism (spindles or
queues: requests beyond it wait, so IOPS saturate and latency grows with queueing), an optional throughput cap,
a read cache (none, or a size) and an optional write-back cache (`write_time`: writes acknowledged after that time,
as an array with NVRAM does, without holding a spindle; none: writes are served like reads). `ram` is no model at
all: today's pool, a btrfs file on a loop device in RAM.

    [lab.storage]
    model = "hdd-array"          # a preset ...
    parallelism = 8              # ... overridden field by field
    # or explicit:  service_time = "5ms", spread = "1ms", parallelism = 16, throughput = "400MB/s", cache = "256MiB",
    #               write_time = "0.5ms"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from ..errors import PlanError
from .units import format_size, parse_size


@dataclass(frozen=True)
class Preset:
    """A named device model and where its figures come from."""

    service_time: str | None
    spread: str | None
    parallelism: int | None
    throughput: str | None
    cache: str | None
    write_time: str | None
    source: str


PRESETS: dict[str, Preset] = {
    # Today's pool: a btrfs file on a loop device on a RAM-backed image; ~46 µs per 4 KiB read at 1 OIO (issue 24).
    "ram": Preset(None, None, None, None, None, None, "no device model: the pool answers from RAM"),
    # A SATA SSD of the seeds' era (Intel X25-E, 2009 datasheet: 4 KiB random read latency 75 µs at the device,
    # 35,000 read IOPS, 250 MB/s sequential read); 150 µs ± 50 µs is that latency seen through a controller and
    # driver, inside the 100-200 µs of issue 24. Parallelism 2 keeps saturation (13,300 IOPS) within what this
    # 2-core machine drives through FUSE and a loop device (~36,000 IOPS at zero service time, measured); the
    # X25-E itself would need 5.
    "flash": Preset("150us", "50us", 2, "250MB/s", "none", "none",
                    "Intel X25-E datasheet (2009): 75 µs device read latency, 250 MB/s; +controller and driver"),
    # TR-3808's array (seed S1, table "Storage System FAS3170A": 140 × 144 GB 15K rpm FC drives; per controller
    # 80 drives in 5 RAID-DP groups of 16). A 15K rpm drive turns in 4 ms (2 ms average rotational latency) and
    # seeks in ~3.5 ms on average (Seagate Cheetah 15K.6 data sheet: 3.4 ms read, 3.9 ms write): ~5.5 ms per
    # random 4-8 KiB I/O, ±1.5 ms over short and long seeks. The seed sized its working set (160 GB per
    # controller) so that it was "not served from the cache": cache none. Parallelism is one controller's data
    # spindles (5 groups × 14 data disks = 70): 12,700 IOPS at saturation. Writes: a FAS logs every write in NVRAM
    # and acknowledges it from there; WAFL writes the data to disk later, in full stripes at a consistency point
    # (Hitz, Lau, Malcolm, "File System Design for an NFS File Server Appliance", USENIX 1994), so a random write
    # does not wait for, or hold, a spindle. The seed gives no write latency; 0.5 ms is our assumption for an
    # NVRAM-logged write mirrored to the HA partner (FAS3170A) — it keeps NFS's synchronous writes (the server's
    # fsync) from costing two spindle visits the seed's array never made.
    "hdd-array": Preset("5.5ms", "1.5ms", 70, None, "none", "0.5ms",
                        "TR-3808 (S1): FAS3170, 15K rpm FC drives, 70 data spindles per controller; Cheetah 15K.6; "
                        "writes acknowledged from NVRAM (WAFL, Hitz et al. 1994), 0.5 ms assumed"),
}

_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\s*$", re.IGNORECASE)
_TIME_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)b/s\s*$", re.IGNORECASE)
_RATE_POW = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
FIELDS = ("service_time", "spread", "parallelism", "throughput", "cache", "write_time")
MAX_PARALLELISM = 1024  # the daemon answers from one table of servers; the kernel keeps at most 1024 in flight


def parse_time_us(value: Any, field: str) -> float:
    """Microseconds from "150us", "5.5ms", "1s"."""
    m = _TIME.match(value) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"{field} must be a time like '150us' or '5.5ms', got {value!r}")
    return float(m.group(1)) * _TIME_NS[m.group(2).lower()] / 1000


def parse_throughput(value: Any) -> float:
    """Bytes per second from "400MB/s" (10^6), "250MiB/s" (2^20), "1GB/s"."""
    m = _RATE.match(value) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"throughput must be a rate like '400MB/s' or '1GiB/s', got {value!r}")
    return float(m.group(1)) * _RATE_POW[m.group(2).lower()]


class StorageSpec(BaseModel):
    """`[lab.storage]`: a preset (`model`) and/or explicit fields; the resolved figures are properties."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str | None = None
    service_time: str | None = None
    spread: str | None = None
    parallelism: int | None = None
    throughput: str | None = None
    cache: str | None = None
    write_time: str | None = None

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        if v is not None and v not in PRESETS:
            raise ValueError(f"model {v!r} is not a preset; choose one of {', '.join(PRESETS)}, or leave model out "
                             "and give service_time and parallelism")
        return v

    @field_validator("service_time", "spread")
    @classmethod
    def _time(cls, v: str | None, info) -> str | None:
        if v is not None:
            us = parse_time_us(v, info.field_name)
            if us > 10_000_000:
                raise ValueError(f"{info.field_name} must be at most 10s, got {v!r}")
        return v

    @field_validator("write_time")
    @classmethod
    def _write_time(cls, v: str | None) -> str | None:
        if v is not None and v.strip().lower() != "none" and parse_time_us(v, "write_time") > 10_000_000:
            raise ValueError(f"write_time must be at most 10s (or 'none'), got {v!r}")
        return v

    @field_validator("parallelism")
    @classmethod
    def _parallelism(cls, v: int | None) -> int | None:
        if v is not None and not 1 <= v <= MAX_PARALLELISM:
            raise ValueError(f"parallelism must be between 1 and {MAX_PARALLELISM} (spindles or queues), got {v}")
        return v

    @field_validator("throughput")
    @classmethod
    def _throughput(cls, v: str | None) -> str | None:
        if v is not None and v.strip().lower() not in ("none", "unlimited") and parse_throughput(v) < 1e5:
            raise ValueError(f"throughput must be at least 100kB/s, got {v!r}")
        return v

    @field_validator("cache")
    @classmethod
    def _cache(cls, v: str | None) -> str | None:
        if v is not None and v.strip().lower() != "none":
            try:
                n = parse_size(v)
            except ValueError:
                raise ValueError(f"cache must be 'none' or a size like '256MiB', got {v!r}") from None
            if not 4096 <= n <= 64 * 1024**3:
                raise ValueError(f"cache must be between 4KiB and 64GiB (or 'none'), got {v!r}")
        return v

    @model_validator(mode="after")
    def _whole(self) -> StorageSpec:
        explicit = [f for f in FIELDS if getattr(self, f) is not None]
        if self.model == "ram" and explicit:
            raise ValueError(f"model 'ram' has no device model, so {', '.join(explicit)} cannot be set; choose "
                             "model = 'flash' or 'hdd-array', or leave model out")
        if self.model is None and explicit and self.service_time is None:
            raise ValueError("service_time: missing; an explicit model needs a service time like '5ms' "
                             "(or choose model = 'flash' or 'hdd-array')")
        if not self.is_ram and self.spread_us > self.service_us:
            raise ValueError(f"spread {self._get('spread')} is larger than service_time {self._get('service_time')}; "
                             "a service time is the mean ± spread and cannot be negative")
        return self

    # the resolved model
    def _get(self, field: str) -> Any:
        own = getattr(self, field)
        if own is not None or self.model is None:
            return own
        return getattr(PRESETS[self.model], field)

    @property
    def is_ram(self) -> bool:
        """No device model: today's pool (no FUSE layer at all)."""
        return self.model == "ram" or (self.model is None and self.service_time is None)

    @property
    def service_us(self) -> float:
        """Mean service time in microseconds (0 for ram)."""
        v = self._get("service_time")
        return 0.0 if v is None else parse_time_us(v, "service_time")

    @property
    def spread_us(self) -> float:
        """Half-width of the uniform spread around the mean, in microseconds."""
        v = self._get("spread")
        return 0.0 if v is None else parse_time_us(v, "spread")

    @property
    def write_us(self) -> float:
        """Time to acknowledge a write from the write-back cache, in microseconds (0: writes served like reads)."""
        v = self._get("write_time")
        return 0.0 if v is None or v.strip().lower() == "none" else parse_time_us(v, "write_time")

    @property
    def servers(self) -> int:
        """Requests served at once (spindles or queues)."""
        return self._get("parallelism") or 1

    @property
    def throughput_bps(self) -> float | None:
        """The throughput cap in bytes per second, or None."""
        v = self._get("throughput")
        return None if v is None or v.strip().lower() in ("none", "unlimited") else parse_throughput(v)

    @property
    def cache_bytes(self) -> int:
        """The model's read cache in bytes (0: none)."""
        v = self._get("cache")
        return 0 if v is None or v.strip().lower() == "none" else parse_size(v)

    @property
    def name(self) -> str:
        """cells.csv's `device_model`: the preset's name, with overrides ('hdd-array parallelism=8'), or the
        explicit model in short ('5ms±1ms ×16, 400MB/s, cache 256MiB')."""
        if self.is_ram:
            return "ram"
        if self.model is not None:
            over = [f"{f}={getattr(self, f)}" for f in FIELDS if getattr(self, f) is not None]
            return " ".join([self.model, *over])
        return self.summary()

    def summary(self) -> str:
        """The model's figures in words: '5.5ms±1.5ms ×70, no throughput cap, no cache'."""
        if self.is_ram:
            return "no device model (the pool answers from RAM)"
        spread = f"±{_time(self.spread_us)}" if self.spread_us else ""
        cap = f"{self.throughput_bps / 1e6:g}MB/s" if self.throughput_bps else "no throughput cap"
        cache = f"cache {format_size(self.cache_bytes)}" if self.cache_bytes else "no cache"
        writes = f", writes acknowledged in {_time(self.write_us)} (write-back)" if self.write_us else ""
        return f"{_time(self.service_us)}{spread} ×{self.servers}, {cap}, {cache}{writes}"

    @property
    def source(self) -> str:
        """Where the preset's figures come from ('' for an explicit model)."""
        return PRESETS[self.model].source if self.model is not None else ""

    # what the model says (the lab test checks fio against these)
    def latency_us(self, block_size: int) -> float:
        """Mean time of one read at 1 outstanding I/O: service, then the transfer at the throughput cap."""
        return self.service_us + (1e6 * block_size / self.throughput_bps if self.throughput_bps else 0.0)

    def saturation_iops(self, block_size: int, read_pct: float = 100) -> float:
        """IOPS with every server busy: parallelism / service time, capped by throughput / block size. With a
        write-back cache writes hold no server and no channel, so a mix of ``read_pct`` % reads saturates when its
        reads do: that figure / the read share (no limit for writes alone)."""
        iops = self.servers * 1e6 / self.service_us if self.service_us else float("inf")
        iops = min(iops, self.throughput_bps / block_size) if self.throughput_bps else iops
        if not self.write_us:
            return iops
        return iops / (read_pct / 100) if read_pct > 0 else float("inf")


def with_device_model(data: dict[str, Any], model: str | None, source: str) -> dict[str, Any]:
    """Plan data whose [lab.storage] is the preset ``model`` in place of the plan's own (None: as written);
    PlanError in one line for a plan without the embedded lab or a name that is not a preset. The run is then over
    that one array: a swept service time ([sweep] service_time, plan.sweep) is dropped with the plan's own model."""
    if model is None:
        return data
    if model not in PRESETS:
        raise PlanError(f"--device-model {model}: not a preset; choose one of {', '.join(PRESETS)}")
    lab = data.get("lab")
    if not isinstance(lab, dict):
        raise PlanError(f"{source}: --device-model {model}: this plan has no embedded lab ([lab]); a device model "
                        "goes under the lab's pool only — run it without --device-model")
    out = {**data, "lab": {**lab, "storage": {"model": model}}}
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and "service_time" in sweep:
        rest = {k: v for k, v in sweep.items() if k != "service_time"}
        out = {k: v for k, v in out.items() if k != "sweep"}
        if set(rest) - {"crossover_band"}:
            out["sweep"] = rest
    return out


def _time(us: float) -> str:
    return f"{us / 1000:g}ms" if us >= 1000 else f"{us:g}us"
