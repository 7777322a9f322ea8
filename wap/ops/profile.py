"""The profile of sample files (`wap suggest`): what the rows that parse hold, column by
column. Made by wap/ops/profiling.py (Spark), read by wap/ops/suggest.py (no Spark)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A string column's values are collected when it has at most this many (accepted_values).
MAX_VALUES = 20


@dataclass(frozen=True)
class ColumnProfile:
    """What the sample holds in one column. `type` is the name a config's `schema:` takes
    (Spark's simple string: `bigint`, `decimal(12,2)`, `timestamp`); `minimum`/`maximum`
    are set for numbers, dates and timestamps (a timestamp's in UTC), `values` (sorted)
    for a string column with at most MAX_VALUES distinct values; `nan` counts the NaN of
    a float column (which Spark sorts above every number)."""

    name: str
    type: str
    nulls: int
    distinct: int | None = None
    minimum: Any = None
    maximum: Any = None
    nan: int = 0
    values: tuple[Any, ...] | None = None
    required: bool = False  # declared `required: true` in the config given


@dataclass(frozen=True)
class Profile:
    """The sample as the job would read it: its files, the rows that parsed, each column,
    and how many rows did not parse (text sources; `inferred`: their types were inferred,
    not declared)."""

    files: tuple[str, ...]
    rows: int
    columns: tuple[ColumnProfile, ...]
    parse_errors: int = 0
    inferred: bool = False
