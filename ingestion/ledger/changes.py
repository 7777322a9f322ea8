"""A typed change to a ledger record: what `Ledger.update_ingest` sets.

An update names the attributes it sets (None removes one); each must be a field the
ledger's records declare (`records.IngestRecord`, `records.BatchRecord`), so a misspelt
name fails where the change is made instead of being stored as a new attribute. An
attribute the records do not declare (a feature's own, e.g. compaction's numbers) is
passed apart, in `extra`, and may not shadow a declared one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from ingestion.ledger.records import BatchRecord, IngestRecord

# Every attribute an update may name: the records' fields, but their key.
UPDATABLE: frozenset[str] = frozenset(
    f.name for cls in (IngestRecord, BatchRecord) for f in fields(cls)
) - {"ingest_id", "extra"}


class Changes(Mapping[str, Any]):
    """The attributes one update sets, checked when made: `Changes(status=..., error=None)`,
    with undeclared ones in `extra` (`Changes({"files_after": 3}, status=...)`)."""

    __slots__ = ("_values",)

    def __init__(self, extra: Mapping[str, Any] | None = None, /, **declared: Any) -> None:
        unknown = sorted(set(declared) - UPDATABLE)
        if unknown:
            raise TypeError(
                f"not a field of a ledger record: {', '.join(unknown)} (an "
                "attribute the records do not declare goes in `extra`)"
            )
        shadowing = sorted(set(extra or ()) & (UPDATABLE | {"ingest_id", "kind"}))
        if shadowing:
            raise TypeError(f"declared fields passed as extra: {', '.join(shadowing)}")
        self._values = MappingProxyType({**(extra or {}), **declared})

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Changes:
        """The change that sets `values` (names checked as the keywords are)."""
        if isinstance(values, Changes):
            return values
        return cls(**values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Changes({dict(self._values)!r})"
