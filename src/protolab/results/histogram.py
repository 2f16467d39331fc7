"""A latency histogram held compactly: bin (ns) → count, as two int64 arrays in bin order.

A record's merged clat histogram has tens to hundreds of bins, and a report reads thousands of records at once: as
a dict of Python ints each bin cost ~100 bytes (a 10,000-window run held ~60 MiB of them, issue 25); as arrays
it costs 16. It reads as a Mapping (`h[bin]`, `h.items()`, `dict(h)`, `h == {…}`), is validated from and dumped
to the same JSON object as before ({"bin": count}), so records on disk do not change.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic_core import core_schema

_MAX = 2**63 - 1


class Histogram(Mapping[int, int]):
    """bin → count, read-only, in the order given (fio's: ascending)."""

    __slots__ = ("_bins", "_counts")

    def __init__(self, items: Mapping[int, int] | None = None):
        items = items or {}
        self._bins = array("q", items.keys())
        self._counts = array("q", items.values())

    def __getitem__(self, key: int) -> int:
        try:
            return self._counts[self._bins.index(key)]
        except (ValueError, TypeError, OverflowError):
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[int]:
        return iter(self._bins)

    def __len__(self) -> int:
        return len(self._bins)

    def values(self):  # type: ignore[override]  (an iterator, not a view: it is read once where it is used)
        return iter(self._counts)

    def items(self):  # type: ignore[override]
        return zip(self._bins, self._counts)

    def arrays(self) -> tuple[array, array]:
        """The bins and their counts (int64 arrays): numpy reads them without a copy."""
        return self._bins, self._counts

    def __repr__(self) -> str:
        return f"Histogram({dict(self.items())!r})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """Validated as dict[int, int] (by pydantic's own validator: bins from digit strings in JSON, counts whole
        numbers, both 0 to 2^63 - 1), then held as arrays; dumped as {bin: count}."""
        whole = core_schema.int_schema(ge=0, le=_MAX)
        as_dict = core_schema.dict_schema(keys_schema=whole, values_schema=core_schema.int_schema(ge=0, le=_MAX,
                                                                                                  strict=True))
        return core_schema.json_or_python_schema(  # from JSON a dict only: its errors name the bin at fault
            json_schema=core_schema.no_info_after_validator_function(cls, as_dict),
            python_schema=core_schema.no_info_after_validator_function(
                cls, core_schema.union_schema([core_schema.is_instance_schema(cls), as_dict])),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda h: dict(h.items())))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": {"type": "integer"}}
